// Package search holds the load-testing policies built on the engine:
// sweeps and the SLO search. Each level is one complete measurement of the
// engine's public loadgen.Run — its own warm-up, window and histograms —
// kept as a loadgen.Step of the returned Result.
//
// [Run] is the entry point: it runs a sweep when the configuration has a
// Load.ConcurrencyRange or Load.RateRange (every level, see
// loadgen.ParseLevels; thresholds judged per level, Config.AbortOnFail
// stopping at the first level that fails), an SLO search when it has
// Config.SLO, and otherwise the engine's single measurement.
//
// The SLO search finds the highest load that holds every SLO: it probes a
// level, doubles it while probes hold and halves it while they fail until a
// failing level sits above a holding one, then bisects to
// Config.SLOResolution. A generator-bound probe counts as failing and the
// outcome (loadgen.SearchOutcome) says the bracket is the generator's; a
// probe with too few samples beyond an SLO's percentile is inconclusive,
// and open-loop probes are lengthened (up to a minute) to have enough.
package search
