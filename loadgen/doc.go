// Package loadgen is oipkit's load-generation engine: it runs one
// measurement of a [Target] — a single load level or a rate profile — and
// returns a self-describing [Result]. It knows nothing of the Open
// Inference Protocol nor of command-line flags; three packages build on it:
//
//   - loadgen/oiptarget: the OIP target (REST JSON or binary, gRPC typed or
//     raw, streams, sequences, shared memory, server statistics and
//     metrics), and the normalization of its settings;
//   - loadgen/search: sweeps and the SLO search, one [Run] per level;
//   - loadgen/render: text, CSV, .hgrm, HTML and comparisons of Results.
//
// The engine keeps four stages apart, each a small type that can be tested
// and reused on its own:
//
//   - pacing: a [Pacer] gives an open loop the intended start of every
//     request — a [RateProfile] (constant, step or linear ramp) with even
//     spacing, [Poisson] gaps, or a pacer of one's own in Config.Pacer;
//   - executing: a [Target] sends one pre-serialized request per call
//     ([TargetFunc] makes one of a function); a [StreamTarget] is answered
//     by streams of responses, a [SequenceTarget] sends requests in ordered
//     sequences, a [ServerStatsTarget] reads the server's own timings and
//     an [AnsweringTarget] says whether its server still answers;
//   - recording: workers record into sharded HdrHistograms that a collector
//     swaps and merges at every interval end;
//   - the result: a [Result] describes the run completely (configuration,
//     counts, rates, self-checks and every histogram, encoded), is judged by
//     [EvaluateThresholds] and [Judge]; package loadgen/merge merges it
//     with the results of other runs or of the other segments of a split
//     test.
//
// [Run] takes a context and returns a Result. The package never owns the
// process: no signal handling, no os.Exit, no GOMAXPROCS.
//
// # Configuration
//
// A [Config] is typed: durations are [Duration]s, thresholds and SLOs
// [Threshold]s parsed once ([ParseThreshold]), a segment a [Segment].
// [Config.Normalize] fills the engine's defaults and checks its settings;
// its errors wrap [ErrConfig] and name the configuration's fields
// (Load.Concurrency, Checks.MaxErrorRate), never a command-line flag — a
// command translates them (oipkit load does). Config also carries, as
// plain data, the OIP target's settings (Target, Inputs, and the OIP side
// of Streaming and Sequence) so that a Result records what was asked for
// in one JSON document; the engine reads them only to describe and
// identify the run (Inputs.Seed also seeds Poisson arrivals), and
// oiptarget.Normalize checks them. A Target of one's own runs with none of
// them: no address, no model.
//
// # Sweeps, searches and steps
//
// Run measures one level. A sweep (LoadConfig.ConcurrencyRange or RateRange,
// see [ParseLevels]) or an SLO search (Config.SLO) is package
// loadgen/search's, which keeps each level or probe as a [Step] and the
// search's outcome as a [SearchOutcome]; Run refuses such a configuration.
// A step or linear rate profile is cut into steps by the interval
// collector. Results stay small whatever their number of steps: result
// histograms are sparse (HdrHistogram's packed form).
//
// # Stability
//
// With LoadConfig.Stability a measurement lasts until the 95% confidence
// intervals of its throughput and its latency percentile are within a
// tolerance, with a minimum sample count for the percentile and a cap on
// time; see [Stability] for the rule.
//
// # Verdicts
//
// Thresholds and the default bound on failed requests (Checks.MaxErrorRate)
// are evaluated by [EvaluateThresholds]; [Judge] turns a result into one
// of package verdict's words — pass, failed, inconclusive or not-run —
// whose Status.ExitCode is the CLI's exit status.
// Failed requests keep their first messages per class (Result.ErrorSamples).
//
// # Answer checks
//
// A Target's Do returns an error for a failed request; [ErrorClass] says
// under which key of Result.Errors the engine counts it (an
// [*HTTPStatusError], a [*ValidationError] for an answer that failed a
// check, a timeout, a gRPC code). The OIP target's checks are described in
// package loadgen/oiptarget.
//
// # Load models
//
// A closed loop (Concurrency) runs N workers that each send the next
// request when the previous one finished; a request's intended start is its
// actual send. An open loop (Rate) computes the i-th intended start t_i from
// the schedule alone — t_i = i/λ at a constant rate, cumulative exponential
// gaps for Poisson, the inverse of the integrated rate under a ramp — never
// from completions or accumulated sleeps, so neither a slow server nor a
// late dispatcher can shift it. One dispatcher waits for each t_i with low
// jitter (a Go timer for long waits, a thread nanosleep to ~100 µs before,
// then yielding) and hands the slot to an idle worker, starting workers as
// needed up to MaxInFlight. A slot due while MaxInFlight requests are in
// flight is dropped and counted, never silently lost. A dispatcher that
// falls behind sends late slots at once; the lateness is measured, and slots
// still unsent when the window closes are counted as unsent.
//
// # What is measured
//
// Three histograms, in nanoseconds (1 ns to 1 h, 3 significant digits):
// response time = completion − intended start (the primary metric: what a
// client arriving on schedule experiences, free of coordinated omission);
// service time = completion − actual send; send lag = actual send −
// intended start. In a closed loop, response and service time coincide.
// Values above the range are recorded as its maximum and counted
// (Counts.Clamped); histogram merges check Merge's dropped count
// (Counts.MergeDropped).
//
// Successful and timed-out requests go into all three histograms. A timeout
// is right-censored — its true latency is at least the timeout — so it is
// kept in the distribution at its measured elapsed time (≥ the timeout)
// rather than dropped from it, counted in Counts.Timeouts and under
// "timeout" in Errors, and the text report marks percentiles at or above
// the timeout with "≥". Other failures (HTTP status outside 2xx, gRPC
// codes, transport and validation errors) are counted by class in Errors
// and their response times go to a separate Failed histogram, so fast
// errors cannot flatter the latency of good requests.
//
// A request belongs to the interval in which it completed. Warm-up requests
// are sent with the same load before the measured window and discarded.
// Memory is bounded whatever the run's length: no per-request samples are
// kept; per-interval summaries (a few hundred bytes each) are kept for the
// result and interval histograms are streamed to the HdrHistogram log.
//
// # Streaming and sequences
//
// With Config.Streaming every request is answered by a stream of
// responses (for the OIP target, gRPC ModelStreamInfer or REST
// generate_stream's server-sent events; see [StreamConfig] and
// [StreamTarget]). Response time is then the time to the last response;
// three more histograms hold the time to first response (from the
// intended start, so it is as free of coordinated omission as response
// time), every gap between two responses of a request (recorded as it
// arrives) and the responses per request. With Config.Sequence requests go in sequences of a stateful
// model ([SequenceConfig], [SequenceStep]).
//
// # Generator self-check
//
// A run whose generator could not keep up measured the generator, not the
// server. See [Checks] for the criteria: for an open loop, dispatching fewer
// than 99% of the scheduled requests, or a send-lag p99 above the lag
// tolerance. The default tolerance is 2 ms rather than perf_analyzer's 1 ms
// because on a small shared machine (the project's CI has 2 cores that also
// run the server) thread wake-ups alone are late by up to about a
// millisecond under load; Checks.LagTolerance tightens it. GC pauses
// (runtime/metrics), scheduling latency, a 1 ms hiccup goroutine and the
// process's CPU time are reported alongside as warnings.
package loadgen
