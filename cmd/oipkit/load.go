package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/oiptarget"
	"github.com/oipkit/oipkit/loadgen/render"
	"github.com/oipkit/oipkit/loadgen/search"
	"github.com/oipkit/oipkit/verdict"
)

func init() {
	register(command{Name: "load", Summary: "generate load against an OIP server and measure latency", Run: runLoad})
}

// loadFlags are the flags of `oipkit load` that do not map one to one onto
// loadgen.Config.
type loadFlags struct {
	protocol, rate, arrival, warmup, data, format string
	rateStep, rateMax                             float64
	stepDuration                                  time.Duration
	output, csv, summaryCSV, hdrLog, html         string
	progress                                      string
	stability, maxErrorRate, sloResolution        string
	segment, startAt                              string
	maxDuration                                   time.Duration
	slo, thresholds                               multiFlag
	concurrencyRange, rateRange                   string
	streaming                                     bool
	streamResponses                               int
	streamShape                                   string
	textInput                                     string
	sequenceLength, sequences                     int
}

// runLoad is oipkit load: flags, then one test (a measurement, a sweep or
// an SLO search) against an OIP server.
func runLoad(ctx context.Context, args []string) error {
	var cfg loadgen.Config
	var f loadFlags
	fs := newLoadFlagSet(&cfg, &f)
	format, hdrFile, err := loadSetup(fs, args, &cfg, &f)
	if err != nil {
		return err
	}
	if hdrFile != nil {
		defer hdrFile.Close()
		cfg.HDRLog = hdrFile
	}
	return runLoadTest(ctx, cfg, f, format)
}

// newLoadFlagSet defines the flags of oipkit load, each setting a field of
// cfg or of f (those apply turns into configuration).
func newLoadFlagSet(cfg *loadgen.Config, f *loadFlags) *flag.FlagSet {
	fs := newFlagSet("load", "load (--http HOST:PORT | --grpc HOST:PORT) --model NAME [flags]", loadDoc)
	t := &cfg.Target
	fs.StringVar(&t.HTTP, "http", "", "REST address of the server: `HOST:PORT` or a base URL (http://…, https://…)")
	fs.StringVar(&t.GRPC, "grpc", "", "gRPC `HOST:PORT` of the server, e.g. 127.0.0.1:8001")
	fs.StringVar(&f.protocol, "protocol", "", "`protocol`: http, http-binary, grpc or grpc-raw (default http for --http, grpc-raw for --grpc)")
	fs.StringVar(&t.Model, "model", "", "model `name`")
	fs.StringVar(&t.ModelVersion, "model-version", "", "model `version` (default: the server's choice)")
	addTLSFlags(fs, &t.TLSFiles)
	fs.Var((*multiFlag)(&t.Headers), "header", "'Key: Value' sent as an HTTP header or gRPC metadata (repeatable)")
	fs.StringVar(&t.Host, "host", "", "Host header / gRPC :authority `override`")
	fs.StringVar(&t.MetricsURL, "metrics-url", "", "the server's Prometheus metrics `URL` (Triton: HOST:8002/metrics; oipkit serve: its HTTP port /metrics): the server-side breakdown when the statistics extension is absent, and with --streaming the server's time to first response and inter-response gap beside the client's")
	fs.DurationVar((*time.Duration)(&t.Timeout), "timeout", oiptarget.DefaultTimeout, "per-request `timeout`")
	fs.Int64Var(&t.MaxBodyBytes, "max-body-bytes", client.DefaultMaxResponseBytes, "largest REST response body in `bytes` (a larger answer fails its request, its excess discarded unread)")
	fs.Int64Var(&t.GRPCMaxMessageBytes, "grpc-max-message-bytes", 0, "largest gRPC response message in `bytes`, counting what decoding it costs (default --max-body-bytes)")
	fs.Int64Var(&t.MaxHeaderBytes, "max-header-bytes", client.DefaultMaxHeaderBytes, "largest response header block in `bytes` (HTTP/1.1 headers, HTTP/2 header list)")
	fs.IntVar(&t.Connections, "connections", 0, "gRPC connections (default 1) or HTTP keep-alive pool `size` (default: one per worker, up to 1024)")
	fs.DurationVar((*time.Duration)(&t.ReadyTimeout), "ready-timeout", oiptarget.DefaultReadyTimeout, "how long to wait for server and model readiness")

	in := &cfg.Inputs
	fs.StringVar(&in.File, "input-data", "", "perf_analyzer-compatible input-data JSON `file`")
	fs.StringVar(&in.Data, "data", "random", "synthesized input data: random or zero")
	fs.Var((*multiFlag)(&in.Shapes), "shape", "`NAME:d1,d2` concrete shape for an input with -1 dims (repeatable; default: -1 → 1)")
	fs.IntVar(&in.StringLength, "string-length", oiptarget.DefaultStringLength, "`length` of synthesized BYTES elements")
	fs.Var((*multiFlag)(&in.Parameters), "param", "request parameter `name=value`, e.g. delay_ms=10 (repeatable)")
	fs.BoolVar(&f.streaming, "streaming", false, "stream: each request over gRPC ModelStreamInfer (--grpc) or REST generate_stream (--http) is answered by a stream of responses; records time to first response, inter-response gaps and responses per request")
	fs.IntVar(&f.streamResponses, "stream-responses", 0, "with --streaming over gRPC: a request is complete after `N` responses on a server that sends no triton_final_response (default: one)")
	fs.StringVar(&f.streamShape, "stream-shape", "auto", "with --streaming over gRPC: the message shape of ModelStreamInfer answers, `auto|triton|mlserver` (triton: ModelStreamInferResponse, Triton and OpenVINO Model Server; mlserver: plain ModelInferResponse, one stream per request; auto: mlserver when the server's metadata names it)")
	fs.StringVar(&f.textInput, "text-input", "", "with --streaming over REST: the generate_stream prompt `text` (default: a fixed sentence)")
	fs.IntVar(&f.sequenceLength, "sequence-length", 0, "send requests in sequences of `L` (sequence_id, sequence_start on the first, sequence_end on the last), one per worker in a closed loop, unary or with --streaming on gRPC streams")
	fs.IntVar(&f.sequences, "num-of-sequences", 0, "open loop with --sequence-length: `N` sequences live at once (default 4)")
	fs.BoolVar(&in.Validate, "validate", false, "check every response against validation_data or the fixture's computed outputs")
	in.CheckEvery = new(int)
	fs.IntVar(in.CheckEvery, "check-every", oiptarget.DefaultCheckEvery, "decode the first answer and then every `N`th in full and check it against the model metadata (0: framing and status only; --validate checks every answer)")
	fs.Uint64Var(&in.Seed, "seed", 1, "`seed` for random data and Poisson arrivals")
	fs.StringVar(&in.SharedMemory, "shared-memory", oiptarget.SharedMemoryNone, "`mode` of passing tensors, as perf_analyzer: none, or system (inputs placed once in registered POSIX shared memory, outputs written there; the server must be on this host)")
	fs.IntVar(&in.OutputSharedMemorySize, "output-shared-memory-size", oiptarget.DefaultOutputSharedMemorySize, "`bytes` of shared memory given to each output with --shared-memory system")

	l := &cfg.Load
	fs.IntVar(&l.Concurrency, "concurrency", 0, "closed loop: `N` workers sending back to back (default 1 without --rate)")
	fs.StringVar(&f.rate, "rate", "", "open loop: rate `profile` in requests/s (number, step:..., linear:...)")
	fs.Float64Var(&f.rateStep, "rate-step", 0, "raise the rate by `R` every --step-duration (with a numeric --rate)")
	fs.DurationVar(&f.stepDuration, "step-duration", 0, "`duration` of each rate step")
	fs.Float64Var(&f.rateMax, "rate-max", 0, "last rate `R` of --rate-step (default: as far as --duration goes)")
	fs.StringVar(&f.concurrencyRange, "concurrency-range", "", "sweep: closed-loop levels `START:END[:STEP]`, STEP a number or xF (e.g. 1:32:x2)")
	fs.StringVar(&f.rateRange, "rate-range", "", "sweep: open-loop rate levels `START:END[:STEP]` in requests/s (e.g. 100:1000:100)")
	fs.StringVar(&f.arrival, "arrival", "", "open-loop arrivals: constant or poisson (default constant)")
	fs.IntVar(&l.MaxInFlight, "max-inflight", 0, "open loop: most requests in flight; more are dropped and counted (default 10000)")
	fs.DurationVar((*time.Duration)(&l.Duration), "duration", loadgen.DefaultDuration, "measured `duration` (of each level of a sweep or probe of a search)")
	fs.Int64Var(&l.Requests, "n", 0, "stop the measurement after `N` requests (no time limit unless --duration is given)")
	fs.Int64Var(&l.Requests, "requests", 0, "same as -n")
	fs.StringVar(&f.warmup, "warmup", "", "unrecorded warm-up before measuring (each level): a duration (5s) or a request count (500)")
	fs.DurationVar((*time.Duration)(&l.Interval), "interval", loadgen.DefaultInterval, "reporting `interval` (also the stability rule's window)")
	fs.StringVar(&f.stability, "stability", "", "measure until stable: the 95% confidence intervals within ±`TOL` (e.g. 5%)")
	fs.DurationVar(&f.maxDuration, "max-duration", loadgen.DefaultStabilityMax, "with --stability: the most a measurement lasts")
	fs.StringVar(&f.segment, "segment", "", "run segment `I/N` of a test split over N generators (I from 0)")
	fs.StringVar(&f.startAt, "start-at", "", "start at this absolute `time` (RFC 3339, e.g. 2025-06-01T12:00:00Z), after waiting for the target; empty: when ready")
	fs.Float64Var(&cfg.Percentile, "percentile", loadgen.DefaultPercentile, "latency `percentile` for the stability rule, the sweep tables and the knee (perf_analyzer's --percentile)")

	fs.DurationVar((*time.Duration)(&cfg.Checks.LagTolerance), "lag-tolerance", loadgen.DefaultLagTolerance, "largest acceptable open-loop send-lag p99")
	fs.Float64Var(&cfg.Checks.RateTolerance, "rate-tolerance", loadgen.DefaultRateTolerance, "largest acceptable dispatch shortfall against the schedule (`fraction`)")
	fs.Var(&f.thresholds, "threshold", "CI gate such as p99<20ms or p(95)<500ms (repeatable)")
	fs.StringVar(&f.maxErrorRate, "max-error-rate", "1%", "fail the run when failed requests (errors and timeouts) exceed this `fraction` of completed ones (100% turns it off)")
	fs.BoolVar(&cfg.AbortOnFail, "abort-on-fail", false, "evaluate the thresholds during the run and stop at the first failure (exit 3)")
	fs.Var(&f.slo, "slo", "search for the highest load that holds this threshold, e.g. 'p99<50ms' (repeatable)")
	fs.StringVar(&f.sloResolution, "slo-resolution", "", "relative resolution of the SLO search (default 5%)")

	fs.StringVar(&f.format, "format", "text", "stdout `format`: "+render.FormatNames())
	fs.StringVar(&f.output, "output", "", "write the JSON result to `file`")
	fs.StringVar(&f.html, "html", "", "write a self-contained HTML report with plots to `file`")
	fs.StringVar(&f.csv, "csv", "", "write one CSV row per interval to `file`")
	fs.StringVar(&f.summaryCSV, "summary-csv", "", "write perf_analyzer-style CSV rows (one per level) to `file`")
	fs.StringVar(&f.hdrLog, "hdr-log", "", "write an HdrHistogram interval log (v1.3) to `file`")
	fs.StringVar(&f.progress, "progress", "auto", "progress on stderr: auto (when a terminal), always or never")

	return fs
}

// loadSetup parses and checks the flags into cfg: the configuration is
// complete and normalized, the output files writable, and the HDR log (if
// asked for) created.
func loadSetup(fs *flag.FlagSet, args []string, cfg *loadgen.Config, f *loadFlags) (render.Format, *os.File, error) {
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return render.Format{}, nil, err
		}
		return render.Format{}, nil, exitError{verdict.ExitUsage} // the flag package printed the error
	}
	if fs.NArg() > 0 {
		return render.Format{}, nil, usageError("unexpected arguments %q", fs.Args())
	}
	if err := checkSetFlags(fs); err != nil {
		return render.Format{}, nil, usageError("%v", err)
	}
	if err := f.apply(cfg, fs); err != nil {
		return render.Format{}, nil, usageError("%v", err)
	}
	format, err := render.FormatNamed(f.format)
	if err != nil {
		return render.Format{}, nil, usageError("--format: %v", err)
	}
	if err := oiptarget.Normalize(cfg); err != nil {
		return render.Format{}, nil, usageError("%v", err)
	}
	if f.progress != "auto" && f.progress != "always" && f.progress != "never" {
		return render.Format{}, nil, usageError("--progress %q: want auto, always or never", f.progress)
	}
	for _, o := range []struct{ flag, path string }{
		{"--output", f.output}, {"--html", f.html}, {"--csv", f.csv}, {"--summary-csv", f.summaryCSV}, {"--hdr-log", f.hdrLog},
	} {
		if err := checkWritable(o.path); err != nil {
			return render.Format{}, nil, usageError("%s: %v", o.flag, err)
		}
	}

	var hdrFile *os.File
	if f.hdrLog != "" {
		if hdrFile, err = os.Create(f.hdrLog); err != nil {
			return render.Format{}, nil, usageError("--hdr-log: %v", err)
		}
	}
	return format, hdrFile, nil
}

// runLoadTest connects to the target, runs the configured test and
// reports it.
func runLoadTest(ctx context.Context, cfg loadgen.Config, f loadFlags, format render.Format) error {
	progress := f.progress == "always" || (f.progress == "auto" && term.IsTerminal(int(os.Stderr.Fd())))
	if progress {
		cfg.Progress = progressLine(flagWriter{os.Stderr})
		cfg.StepDone = stepLine(flagWriter{os.Stderr}, cfg.Percentile)
	}
	if f.progress != "never" {
		timeout := cfg.Target.ReadyTimeout.D()
		cfg.Target.ReadyProgress = func(waited time.Duration, why string) {
			fmt.Fprintf(flagWriter{os.Stderr}, "oipkit load: waiting for the target to be ready (%s of %s): %s\n",
				waited.Round(time.Second), timeout, why)
		}
	}

	start := time.Now()
	startAt := cfg.Load.StartAt
	notRun := func(err error) error {
		res := loadgen.NewErrorResult(cfg, start, err)
		_ = writeOutputs(res, f) // a failed run still leaves its record
		fmt.Fprintf(flagWriter{os.Stderr}, "oipkit load: %v\n", err)
		if errors.Is(err, loadgen.ErrConfig) {
			return exitError{verdict.ExitUsage}
		}
		return exitError{verdict.ExitNotRun}
	}
	tcfg := cfg
	if !startAt.IsZero() {
		// Wait for the target until the start time, even where nothing
		// listens yet: the segments' pods may start before the server's.
		until := time.Until(startAt)
		if until <= 0 {
			return notRun(fmt.Errorf("the start time %s passed %v ago: segments started at it would not line up; give a time ahead", f.startAt, (-until).Round(time.Millisecond)))
		}
		tcfg.Target.ReadyTimeout = loadgen.Duration(until)
		tcfg.Target.WaitForListener = true
	}
	target, err := oiptarget.NewTarget(ctx, tcfg)
	if err != nil {
		return notRun(err)
	}
	defer target.Close()
	info := target.Info()
	if progress {
		fmt.Fprintf(flagWriter{os.Stderr}, "oipkit load: %s %s over %s, %d payload(s) of %v bytes\n",
			info.Server.Name, info.Model.Name, cfg.Target.Protocol, info.Payloads, info.Bytes)
	}
	var clock *loadgen.ClockOffset
	if seg := cfg.Load.Segment; seg != nil {
		c := estimateClock(ctx, target, startAt)
		clock = &c
		if f.progress != "never" {
			fmt.Fprintf(flagWriter{os.Stderr}, "oipkit load: segment %s of test %s; the target's clock against this one: %s\n", seg, loadgen.ShortID(loadgen.TestID(cfg)), c)
		}
	}
	if !startAt.IsZero() && f.progress != "never" {
		fmt.Fprintf(flagWriter{os.Stderr}, "oipkit load: starting at %s (in %v)\n", startAt.Format(time.RFC3339Nano), time.Until(startAt).Round(time.Millisecond))
	}
	res, err := search.Run(ctx, target, cfg)
	if err != nil {
		fmt.Fprintf(flagWriter{os.Stderr}, "oipkit load: %v\n", err)
		return exitError{verdict.ExitUsage}
	}
	res.Target = &info
	res.Clock = clock
	return finish(res, cfg.Thresholds, format, func(r *loadgen.Result) error { return writeOutputs(r, f) })
}

// loadDoc is oipkit load's help text.
const loadDoc = `
Send inference requests to one model of an Open Inference Protocol server and
measure latency, in a closed loop (--concurrency N workers back to back) or
an open loop (--rate: requests start at precomputed intended times, and
response time is measured from those times, so a stalled server cannot hide
its stall from the numbers). Request bodies are serialized once, from the
model metadata (--data, --shape) or a perf_analyzer input-data file.

Rate profiles: --rate 1000, --rate step:100:1000:100:5s (from:to:step:every),
--rate linear:100:1000:30s (from:to:over); or --rate 100 --rate-step 100
--step-duration 5s [--rate-max 1000]. Step and linear profiles are reported
per step too.

Sweeps: --concurrency-range 1:32:x2 or --rate-range 100:1000:100 measure each
level on its own (own warm-up, window and histograms) and report one row per
level; STEP is a number or xF for a factor (default 1, as perf_analyzer).

SLO search: --slo 'p99<50ms' [--slo 'error_rate<0.1%'] finds the highest rate
(open loop; or concurrency with --concurrency/--concurrency-range) that holds
every SLO, by doubling then bisecting to --slo-resolution, and reports every
probe. --rate or the ranges give the start and bounds.

Stability: --stability 5% measures each level until the 95% confidence
intervals of throughput and of the --percentile latency are within ±5%
(with a minimum sample count for that percentile), up to --max-duration.

Thresholds (repeatable): p99<20ms, p(95)<500ms, p99.9<=50ms, service_p50<5ms,
send_lag_p99<1ms, max<1s, avg<10ms, error_rate<0.1%, rps>1000,
offered_rps>=990, dropped<=0, timeouts==0. Unless one bounds error_rate,
errors or timeouts, failed requests above --max-error-rate (default 1%) fail
the run. --abort-on-fail ends a long run (or a sweep) at the first failure.

Segments: --segment I/N runs segment I (from 0) of N of the same test, for
load from several machines or pods: the open-loop schedule is dealt out
request by request (segment I sends requests I, I+N, I+2N, ... of the whole
schedule, so the segments' union is exactly the one-process schedule),
concurrency and -n are split with the remainder going to the first
segments. --start-at 2025-06-01T12:00:00Z (RFC 3339) starts every segment
at that time, after waiting for the target; the measurement then starts at
--start-at + --warmup. Each segment's result records its segment, the test's
identity and the offset of the target's clock from its own; 'oipkit report'
merges them into the whole test's result and gates it. A segment takes no
--threshold, sweep, SLO search, --stability or --abort-on-fail.

Answer checks: every answer's framing and status are checked (HTTP status,
lengths, chunking, Inference-Header-Content-Length; gRPC framing and
status). Besides, the first answer and then every --check-every N-th
(default 32) is decoded in full and checked against the model metadata:
JSON or protobuf validity, output names, datatypes, shapes (-1 matches any)
and element counts against the data. One that fails is a failed request
("validation", with its reason), so a server answering 200 with what is not
an inference response fails the --max-error-rate bound. An answer not
sampled costs no extra allocation; the default rule adds about 2% to the
generator's CPU per REST JSON request, under 1% per gRPC request. Streamed
responses are not sampled: each ModelStreamInfer message's protobuf wire
format is scanned, and each generate_stream event decoded, as it comes.
--validate checks every answer, values included.

Exit status: 0 pass; 1 usage error (nothing ran); 2 could not run or complete
(unreachable, not an OIP server, never ready, interrupted, the start time
passed); 3 a threshold, SLO or the failed-request bound failed; 4 inconclusive
(generator-bound, not stable within --max-duration, or an SLO search bounded
by the generator). 4 outranks 3.`

// clockBudget is how long a segment spends estimating the target's clock
// offset when it has the time: about three rounds of probes.
const clockBudget = 4 * time.Second

// estimateClock estimates the target's clock offset within clockBudget,
// and before the start time (keeping a quarter second in hand).
func estimateClock(ctx context.Context, t *oiptarget.OIPTarget, startAt time.Time) loadgen.ClockOffset {
	deadline := time.Now().Add(clockBudget)
	if !startAt.IsZero() && startAt.Add(-250*time.Millisecond).Before(deadline) {
		deadline = startAt.Add(-250 * time.Millisecond)
	}
	if time.Until(deadline) < 50*time.Millisecond {
		return loadgen.ClockOffset{Error: "no time left before the start time"}
	}
	return t.EstimateClockOffset(ctx, deadline)
}

// durationFlags must be positive when given: a zero or negative value is a
// mistake, never "the default".
var durationFlags = []string{"duration", "interval", "timeout", "ready-timeout", "step-duration", "max-duration", "lag-tolerance"}

// checkSetFlags rejects explicitly given values that are out of range.
func checkSetFlags(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if err != nil {
			return
		}
		v := fl.Value.String()
		for _, name := range durationFlags {
			if fl.Name == name {
				if d, _ := time.ParseDuration(v); d <= 0 {
					err = fmt.Errorf("--%s %s: want a duration above zero, e.g. 10s", name, v)
				}
			}
		}
		switch fl.Name {
		case "concurrency", "max-inflight", "connections", "string-length", "n", "requests":
			if n, _ := strconv.ParseInt(v, 10, 64); n < 1 {
				err = fmt.Errorf("--%s %s: want at least 1", fl.Name, v)
			}
		case "rate-tolerance":
			if x, _ := strconv.ParseFloat(v, 64); !(x > 0 && x < 1) {
				err = fmt.Errorf("--rate-tolerance %s: want a fraction between 0 and 1", v)
			}
		case "percentile":
			if x, _ := strconv.ParseFloat(v, 64); !(x > 0 && x < 100) {
				err = fmt.Errorf("--percentile %s: want a number between 0 and 100, e.g. 99", v)
			}
		}
	})
	return err
}

// apply folds the flags that need interpretation into cfg.
func (f *loadFlags) apply(cfg *loadgen.Config, fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.protocol != "" {
		p, err := client.ParseProtocol(f.protocol)
		if err != nil {
			return err
		}
		cfg.Target.Protocol = p
	}
	cfg.Load.Arrival = loadgen.Arrival(f.arrival)
	if err := f.applyRates(cfg); err != nil {
		return err
	}
	switch {
	case f.streaming:
		cfg.Streaming = &loadgen.StreamConfig{Responses: f.streamResponses, TextInput: f.textInput, Shape: client.StreamShape(f.streamShape)}
	case set["stream-shape"]:
		return errors.New("--stream-shape needs --streaming")
	case set["stream-responses"]:
		return errors.New("--stream-responses needs --streaming")
	case set["text-input"]:
		return errors.New("--text-input needs --streaming")
	}
	switch {
	case set["sequence-length"]:
		cfg.Sequence = &loadgen.SequenceConfig{Length: f.sequenceLength, Sequences: f.sequences}
	case set["num-of-sequences"]:
		return errors.New("--num-of-sequences needs --sequence-length")
	}
	if f.warmup != "" {
		if n, err := strconv.ParseInt(f.warmup, 10, 64); err == nil {
			cfg.Load.WarmupRequests = n
		} else if d, err := time.ParseDuration(f.warmup); err == nil {
			cfg.Load.Warmup = loadgen.Duration(d)
		} else {
			return fmt.Errorf("--warmup %q: want a duration (5s) or a request count (500)", f.warmup)
		}
	}
	// -n alone measures until N requests, with no time limit.
	if (set["n"] || set["requests"]) && !set["duration"] {
		cfg.Load.Duration = 0
	}
	if f.stability != "" {
		tol, err := parseFraction("--stability", f.stability)
		if err != nil {
			return err
		}
		if set["duration"] {
			return errors.New("--stability measures until stable: give its cap as --max-duration, not --duration")
		}
		cfg.Load.Stability = &loadgen.StabilityConfig{Tolerance: tol, MaxDuration: loadgen.Duration(f.maxDuration)}
		cfg.Load.Duration = 0
	} else if set["max-duration"] {
		return errors.New("--max-duration goes with --stability")
	}
	if f.segment != "" {
		seg, err := loadgen.ParseSegment(f.segment)
		if err != nil {
			return fmt.Errorf("--segment: %w", err)
		}
		cfg.Load.Segment = &seg
	}
	if f.startAt != "" {
		at, err := time.Parse(time.RFC3339Nano, f.startAt)
		if err != nil {
			return fmt.Errorf("--start-at %q: want an RFC 3339 time such as 2025-06-01T12:00:00Z or 2025-06-01T14:00:00.5+02:00", f.startAt)
		}
		cfg.Load.StartAt = at
	}
	mer, err := parseFraction("--max-error-rate", f.maxErrorRate)
	if err != nil {
		return err
	}
	cfg.Checks.MaxErrorRate = &mer
	// Parsed once here: the configuration holds thresholds, not strings.
	if cfg.Thresholds, err = loadgen.ParseThresholds(f.thresholds); err != nil {
		return fmt.Errorf("%w: %v", loadgen.ErrConfig, err)
	}
	if len(f.slo) > 0 {
		if cfg.SLO, err = loadgen.ParseThresholds(f.slo); err != nil {
			return fmt.Errorf("%w: --slo: %v", loadgen.ErrConfig, err)
		}
	}
	if f.sloResolution != "" {
		if cfg.SLOResolution, err = parseFraction("--slo-resolution", f.sloResolution); err != nil {
			return err
		}
	}
	return nil
}

// parseFraction reads "5%" or "0.05".
func parseFraction(flagName, s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%s %q: want a fraction (0.05) or a percentage (5%%)", flagName, s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v > 1 {
		return 0, fmt.Errorf("%s %q: want a value from 0 to 100%%", flagName, s)
	}
	return v, nil
}

// checkWritable fails when a file cannot be written at path — a missing
// folder, a folder in its place, no permission — before anything runs, so
// a long run is not lost to a typo in an output path. It leaves nothing
// behind.
func checkWritable(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("cannot write %s: folder %s: %v", path, dir, errors.Unwrap(err))
	case !st.IsDir():
		return fmt.Errorf("cannot write %s: %s is not a folder", path, dir)
	}
	probe, err := os.CreateTemp(dir, ".oipkit-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", path, errors.Unwrap(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// applyRates parses the rate profile (--rate, or --rate with --rate-step)
// and the sweep ranges into cfg, once.
func (f *loadFlags) applyRates(cfg *loadgen.Config) error {
	rate := f.rate
	if f.rateStep != 0 || f.stepDuration != 0 || f.rateMax != 0 {
		from, err := strconv.ParseFloat(f.rate, 64)
		if err != nil || f.rateStep == 0 || f.stepDuration <= 0 {
			return errors.New("--rate-step needs a numeric --rate, a non-zero --rate-step and a --step-duration")
		}
		to := f.rateMax
		if to == 0 {
			steps := math.Ceil(float64(cfg.Load.Duration) / float64(f.stepDuration))
			to = from + f.rateStep*max(steps-1, 0)
		}
		rate = fmt.Sprintf("step:%v:%v:%v:%v", from, to, f.rateStep, f.stepDuration)
	}
	var err error
	if rate != "" {
		if cfg.Load.Rate, err = loadgen.ParseRate(rate); err != nil {
			return fmt.Errorf("%w: %v", loadgen.ErrConfig, err)
		}
	}
	for _, r := range []struct {
		spec, flag string
		into       *loadgen.Levels
	}{{f.concurrencyRange, "--concurrency-range", &cfg.Load.ConcurrencyRange}, {f.rateRange, "--rate-range", &cfg.Load.RateRange}} {
		if r.spec == "" {
			continue
		}
		if *r.into, err = loadgen.ParseLevels(r.spec, r.flag == "--concurrency-range"); err != nil {
			return fmt.Errorf("%w: %s: %v", loadgen.ErrConfig, r.flag, err)
		}
	}
	return nil
}

// finish evaluates thresholds, writes the outputs, prints the report and
// returns the exit status, for load and report alike.
//
// A segment of a split test is not gated: its share of the test says
// nothing about thresholds or the failed-request bound, which the merged
// result is judged by (oipkit report). Its status says whether it ran and
// whether its generator kept up.
func finish(res *loadgen.Result, thresholds []loadgen.Threshold, format render.Format, write func(*loadgen.Result) error) error {
	if res.Config.Load.Segment == nil {
		loadgen.EvaluateThresholds(res, thresholds)
	}
	werr := write(res)
	if err := flagReporter(format.New(res))(os.Stdout); err != nil {
		fmt.Fprintf(flagWriter{os.Stderr}, "oipkit: write report: %v\n", err)
	}
	if werr != nil {
		fmt.Fprintf(flagWriter{os.Stderr}, "oipkit: %v\n", werr)
		return exitError{verdict.ExitUsage}
	}
	v := loadgen.Judge(res)
	code := v.Status.ExitCode()
	if code != verdict.ExitPass {
		// One line on stderr, whatever the format: the reason a CI job failed.
		fmt.Fprintf(flagWriter{os.Stderr}, "oipkit: exit status %d (%s): %s\n", code, v.Status, strings.Join(v.Reasons, "; "))
		return exitError{code}
	}
	return nil
}

// writeOutputs writes the result files asked for with --output, --html,
// --csv and --summary-csv.
func writeOutputs(res *loadgen.Result, f loadFlags) error {
	for _, o := range []struct {
		path string
		rep  render.Reporter
	}{
		{f.output, flagReporter(render.NewJSONReporter(res))},
		{f.html, flagReporter(render.NewHTMLReporter(res))},
		{f.csv, flagReporter(render.NewIntervalCSVReporter(res))},
		{f.summaryCSV, flagReporter(render.NewSummaryCSVReporter(res))},
	} {
		if o.path == "" {
			continue
		}
		if err := writeFile(o.path, o.rep); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes a rendering to path through a temporary file in the same
// folder, renamed into place once complete: a reader (a merge collecting
// segments from a shared volume) never sees half a file.
func writeFile(path string, rep render.Reporter) error {
	w, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			w.Close()
			os.Remove(w.Name())
		}
	}()
	if err := rep(w); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	done = true
	if err := os.Rename(w.Name(), path); err != nil {
		os.Remove(w.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// progressLine prints one line per interval: elapsed time, completed and
// requested rate, in flight, the interval's response-time p50/p99, errors
// and dropped requests.
func progressLine(w io.Writer) func(loadgen.IntervalStats) {
	var mu sync.Mutex
	return func(s loadgen.IntervalStats) {
		mu.Lock()
		defer mu.Unlock()
		req := ""
		if s.RequestedRate > 0 {
			req = fmt.Sprintf(" (requested %.0f/s)", s.RequestedRate)
		}
		fmt.Fprintf(w, "[%6.1fs] %8.1f req/s%s  in flight %d  p50 %v  p99 %v  errors %d  timeouts %d  dropped %d\n",
			s.Start+s.Length, s.Rate, req, s.InFlight, shortDur(s.ResponseP50), shortDur(s.ResponseP99), s.Errors, s.Timeouts, s.Dropped)
	}
}

// stepLine prints one line per sweep level or search probe.
func stepLine(w io.Writer, pct float64) func(loadgen.Step) {
	return func(s loadgen.Step) {
		h := s.Histograms.Response
		verdict := s.Verdict
		if s.Why != "" {
			verdict += ": " + s.Why
		}
		fmt.Fprintf(w, "oipkit load: %s %s: %.1f req/s, p50 %v, p%v %v, errors %d, timeouts %d %s\n", s.Kind, s.Label(),
			s.Rates.Completed, shortDur(int64(h.Quantile(50))), pct, shortDur(int64(h.Quantile(pct))), s.Counts.Errors, s.Counts.Timeouts, verdict)
	}
}

func shortDur(ns int64) time.Duration {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// usageError prints a usage or configuration error and returns exit 1.
func usageError(format string, args ...any) error {
	fmt.Fprintf(flagWriter{os.Stderr}, "oipkit: %s\n", fmt.Sprintf(format, args...))
	return exitError{verdict.ExitUsage}
}
