// Package loadgen is oipkit's load generator for Open Inference Protocol
// servers. It keeps four stages apart, each a small type that can be tested
// and reused on its own:
//
//   - pacing: a [RateProfile] (constant, step or linear ramp) and an
//     [Arrival] process (constant or seeded Poisson) make a [Schedule] of
//     intended start times;
//   - executing: a [Target] sends one pre-serialized request per call;
//     [OIPTarget] is the OIP one (REST JSON or binary, gRPC typed or raw);
//   - recording: workers record into sharded HdrHistograms that a collector
//     swaps and merges at every interval end;
//   - rendering: a [Result] describes the run completely (configuration,
//     counts, rates, self-checks and every histogram, encoded), and
//     [Reporter]s are pure functions of it.
//
// [Run] takes a context and returns a Result. The package never owns the
// process: no signal handling, no os.Exit, no GOMAXPROCS.
//
// # Sweeps, searches and steps
//
// A sweep (LoadConfig.ConcurrencyRange or RateRange, see [ParseLevels])
// runs one complete measurement per level — warm-up, window, histograms —
// and keeps each as a [Step]; an SLO search (Config.SLO) probes levels by
// doubling, halving and bisecting to a stated resolution and keeps every
// probe (see [SearchOutcome]); a step or linear rate profile is cut into
// steps by the interval collector. Results stay small whatever their number
// of steps: result histograms are sparse (HdrHistogram's packed form).
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
// are evaluated by [EvaluateThresholds]; [Judge] turns a result into pass,
// failed, inconclusive or not-run, which the CLI maps to its exit status.
// Failed requests keep their first messages per class (Result.ErrorSamples).
//
// # Renderings
//
// [Formats] lists the renderings, defined once: text, JSON, interval CSV,
// perf_analyzer-style summary CSV, the .hgrm spectrum and a self-contained
// HTML page with plots (package htmlpage); [NewComparisonHTMLReporter]
// overlays several results and [WriteComparison] tabulates them in
// Markdown.
//
// # Before the run
//
// [NewTarget] identifies the target with client.Identify (a wrong port or
// a server that is not OIP fails at once, naming the likely mistake), waits
// for readiness with progress, and reads metadata through a control client
// whose answers are capped (ready.go), so a hostile server cannot grow the
// generator before the run starts.
//
// # Answer checks
//
// Every answer's framing and status are checked as it is read. The first
// answer and then every InputConfig.CheckEvery-th (default 32) is also
// kept, decoded with the project's codec and checked against the model's
// metadata (sample.go); a failed check is a [ValidationError] with its
// reason, counted like any failed request, so a server that answers 200
// with what is not an inference response fails the default failed-request
// bound. An answer not sampled is read and dropped, allocating nothing.
// With Validate every answer is checked, values included.
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
// responses (gRPC ModelStreamInfer, or REST generate_stream's server-sent
// events; see [StreamConfig] and [StreamTarget]). Response time is then the
// time to the last response; three more histograms hold the time to first
// response (from the intended start, so it is as free of coordinated
// omission as response time), every gap between two responses of a
// request (recorded as it arrives) and the responses per request. A gRPC
// stream carries one request at a time and is given back to a pool after
// a clean completion, or closed after anything else (a timeout, an error,
// a response for another id), so nothing late is ever counted for the next
// request. With Config.Sequence requests go in sequences of a stateful
// model ([SequenceConfig]).
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
