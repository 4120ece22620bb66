// Package oiptarget is the load generator's Open Inference Protocol
// target: an [OIPTarget] implements the engine's loadgen.Target,
// StreamTarget, SequenceTarget, ServerStatsTarget and AnsweringTarget for
// one model of an OIP server. It is named for what it is to the engine —
// the OIP implementation of its target interfaces — so that a target of
// one's own (another protocol, a function, a fake) sits beside it rather
// than inside the engine.
//
// # Configuration
//
// Its settings are the Target, Inputs, Streaming and Sequence parts of a
// loadgen.Config. [Normalize] fills their defaults and checks them (an
// address and a model, the protocol, shapes, the metrics URL, shared
// memory, what a streaming or sequence run allows over each transport),
// then normalizes the engine's part; [NewTarget] calls it. Errors wrap
// loadgen.ErrConfig and name the configuration's fields.
//
// # Before the run
//
// [NewTarget] identifies the target with client.Identify (a wrong port or
// a server that is not OIP fails at once, naming the likely mistake), waits
// for readiness with progress, and reads metadata through a control client
// whose answers are capped (ready.go), so a hostile server cannot grow the
// generator before the run starts. It then builds the inputs — synthesized
// from the metadata (Inputs.Data, Inputs.Shapes) or read from a
// perf_analyzer input-data file — and serializes every distinct request
// once, so that Do only sends bytes.
//
// # Requests
//
// Do sends one request over REST (JSON or the binary extension) or gRPC
// (typed or raw bytes). DoStream sends a streamed one: gRPC
// ModelStreamInfer, whose stream carries one request at a time and is given
// back to a pool after a clean completion, or closed after anything else
// (a timeout, an error, a response for another id), so nothing late is
// ever counted for the next request; or REST generate_stream, read as
// server-sent events. DoSequence adds the sequence extension's parameters
// (sequence_id, sequence_start, sequence_end). With Inputs.SharedMemory
// system, inputs are placed once in registered POSIX shared memory.
//
// # Answer checks
//
// Every answer's framing and status are checked as it is read. The first
// answer and then every Inputs.CheckEvery-th (default [DefaultCheckEvery])
// is also kept, decoded with the project's codec and checked against the
// model's metadata (sample.go); a failed check is a
// loadgen.ValidationError with its reason, counted like any failed
// request, so a server that answers 200 with what is not an inference
// response fails the default failed-request bound. An answer not sampled is
// read and dropped, allocating nothing. With Inputs.Validate every answer
// is checked, values included, against validation_data or the fixture
// oracle.
//
// # Server-side figures
//
// ServerStats reads the statistics extension, or the server's Prometheus
// metrics (Target.MetricsURL; Triton's nv_inference_* families), before and
// after the measured window; the engine keeps the difference in
// Result.Server. EstimateClockOffset estimates the server's clock against
// this one, for the segments of a split test.
package oiptarget
