package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
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
	output, csv, summaryCSV, hdrLog               string
	progress                                      string
}

func runLoad(ctx context.Context, args []string) error {
	var cfg loadgen.Config
	var f loadFlags
	fs := newFlagSet("load", "load (--http URL | --grpc HOST:PORT) --model NAME [flags]", `
Send inference requests to one model of an Open Inference Protocol server and
measure latency, in a closed loop (--concurrency N workers back to back) or
an open loop (--rate: requests start at precomputed intended times, and
response time is measured from those times, so a stalled server cannot hide
its stall from the numbers). Request bodies are serialized once, from the
model metadata (--data, --shape) or a perf_analyzer input-data file.

Rate profiles: --rate 1000, --rate step:100:1000:100:5s (from:to:step:every),
--rate linear:100:1000:30s (from:to:over); or --rate 100 --rate-step 100
--step-duration 5s [--rate-max 1000].

Thresholds (repeatable): p99<20ms, p99.9<=50ms, service_p50<5ms,
send_lag_p99<1ms, max<1s, error_rate<0.1%, rps>1000, offered_rps>=990,
dropped<=0, timeouts==0.

Exit status: 0 pass; 1 usage or configuration error; 2 could not run (target
unreachable or not ready, run cancelled or failed); 3 a threshold failed;
4 generator-bound (the generator could not keep up: the result must not be
published as a server result). Precedence: 1, 2, 4, 3.`)
	t := &cfg.Target
	fs.StringVar(&t.HTTP, "http", "", "REST base `URL` of the server, e.g. http://127.0.0.1:8000")
	fs.StringVar(&t.GRPC, "grpc", "", "gRPC `host:port` of the server, e.g. 127.0.0.1:8001")
	fs.StringVar(&f.protocol, "protocol", "", "`protocol`: http, http-binary, grpc or grpc-raw (default http for --http, grpc-raw for --grpc)")
	fs.StringVar(&t.Model, "model", "", "model `name`")
	fs.StringVar(&t.ModelVersion, "model-version", "", "model `version` (default: the server's choice)")
	addTLSFlags(fs, &t.TLSFiles)
	fs.Var((*multiFlag)(&t.Headers), "header", "'Key: Value' sent as an HTTP header or gRPC metadata (repeatable)")
	fs.StringVar(&t.Host, "host", "", "Host header / gRPC :authority `override`")
	fs.DurationVar((*time.Duration)(&t.Timeout), "timeout", loadgen.DefaultTimeout, "per-request `timeout`")
	fs.IntVar(&t.Connections, "connections", 0, "gRPC connections (default 1) or HTTP keep-alive pool `size` (default: one per worker, up to 1024)")
	fs.DurationVar((*time.Duration)(&t.ReadyTimeout), "ready-timeout", loadgen.DefaultReadyTimeout, "how long to wait for server and model readiness")

	in := &cfg.Inputs
	fs.StringVar(&in.File, "input-data", "", "perf_analyzer-compatible input-data JSON `file`")
	fs.StringVar(&in.Data, "data", "random", "synthesized input data: random or zero")
	fs.Var((*multiFlag)(&in.Shapes), "shape", "`NAME:d1,d2` concrete shape for an input with -1 dims (repeatable; default: -1 → 1)")
	fs.IntVar(&in.StringLength, "string-length", loadgen.DefaultStringLength, "`length` of synthesized BYTES elements")
	fs.Var((*multiFlag)(&in.Parameters), "param", "request parameter `name=value`, e.g. delay_ms=10 (repeatable)")
	fs.BoolVar(&in.Validate, "validate", false, "check every response against validation_data or the fixture's computed outputs")
	fs.Uint64Var(&in.Seed, "seed", 1, "`seed` for random data and Poisson arrivals")

	l := &cfg.Load
	fs.IntVar(&l.Concurrency, "concurrency", 0, "closed loop: `N` workers sending back to back (default 1 without --rate)")
	fs.StringVar(&f.rate, "rate", "", "open loop: rate `profile` in requests/s (number, step:..., linear:...)")
	fs.Float64Var(&f.rateStep, "rate-step", 0, "raise the rate by `R` every --step-duration (with a numeric --rate)")
	fs.DurationVar(&f.stepDuration, "step-duration", 0, "`duration` of each rate step")
	fs.Float64Var(&f.rateMax, "rate-max", 0, "last rate `R` of --rate-step (default: as far as --duration goes)")
	fs.StringVar(&f.arrival, "arrival", "", "open-loop arrivals: constant or poisson (default constant)")
	fs.IntVar(&l.MaxInFlight, "max-inflight", 0, "open loop: most requests in flight; more are dropped and counted (default 10000)")
	fs.DurationVar((*time.Duration)(&l.Duration), "duration", loadgen.DefaultDuration, "measured `duration`")
	fs.StringVar(&f.warmup, "warmup", "", "unrecorded warm-up before measuring: a duration (5s) or a request count (500)")
	fs.DurationVar((*time.Duration)(&l.Interval), "interval", loadgen.DefaultInterval, "reporting `interval`")

	fs.DurationVar((*time.Duration)(&cfg.Checks.LagTolerance), "lag-tolerance", loadgen.DefaultLagTolerance, "largest acceptable open-loop send-lag p99")
	fs.Float64Var(&cfg.Checks.RateTolerance, "rate-tolerance", loadgen.DefaultRateTolerance, "largest acceptable dispatch shortfall against the schedule (`fraction`)")
	fs.Var((*multiFlag)(&cfg.Thresholds), "threshold", "CI gate such as p99<20ms (repeatable)")

	fs.StringVar(&f.format, "format", "text", "stdout `format`: text, json, csv (intervals), summary-csv or hgrm")
	fs.StringVar(&f.output, "output", "", "write the JSON result to `file`")
	fs.StringVar(&f.csv, "csv", "", "write one CSV row per interval to `file`")
	fs.StringVar(&f.summaryCSV, "summary-csv", "", "write a perf_analyzer-style summary CSV to `file`")
	fs.StringVar(&f.hdrLog, "hdr-log", "", "write an HdrHistogram interval log (v1.3) to `file`")
	fs.StringVar(&f.progress, "progress", "auto", "per-interval progress on stderr: auto (when a terminal), always or never")

	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitError{exitUsage} // the flag package printed the error
	}
	if fs.NArg() > 0 {
		return usageError("unexpected arguments %q", fs.Args())
	}
	if err := f.apply(&cfg); err != nil {
		return usageError("%v", err)
	}
	reporter, err := stdoutReporter(f.format)
	if err != nil {
		return usageError("%v", err)
	}
	if err := cfg.Normalize(); err != nil {
		return usageError("%v", err)
	}

	var hdrFile *os.File
	if f.hdrLog != "" {
		if hdrFile, err = os.Create(f.hdrLog); err != nil {
			return usageError("--hdr-log: %v", err)
		}
		defer hdrFile.Close()
		cfg.HDRLog = hdrFile
	}
	if f.progress == "always" || (f.progress == "auto" && term.IsTerminal(int(os.Stderr.Fd()))) {
		cfg.Progress = progressLine(os.Stderr)
	} else if f.progress != "auto" && f.progress != "never" {
		return usageError("--progress: want auto, always or never")
	}

	start := time.Now()
	target, err := loadgen.NewTarget(ctx, cfg)
	if err != nil {
		res := loadgen.NewErrorResult(cfg, start, err)
		_ = writeOutputs(res, f) // a failed run still leaves its record
		fmt.Fprintf(os.Stderr, "oipkit load: %v\n", err)
		if errors.Is(err, loadgen.ErrConfig) {
			return exitError{exitUsage}
		}
		return exitError{exitNotRun}
	}
	defer target.Close()
	info := target.Info()
	if cfg.Progress != nil {
		fmt.Fprintf(os.Stderr, "oipkit load: %s %s over %s, %d payload(s) of %v bytes\n",
			info.Server.Name, info.Model.Name, cfg.Target.Protocol, info.Payloads, info.Bytes)
	}
	res, err := loadgen.Run(ctx, target, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "oipkit load: %v\n", err)
		return exitError{exitUsage}
	}
	res.Target = &info
	return finish(res, cfg.Thresholds, f.format, reporter, func(r *loadgen.Result) error { return writeOutputs(r, f) })
}

// apply folds the flags that need interpretation into cfg.
func (f *loadFlags) apply(cfg *loadgen.Config) error {
	if f.protocol != "" {
		p, err := client.ParseProtocol(f.protocol)
		if err != nil {
			return err
		}
		cfg.Target.Protocol = p
	}
	cfg.Load.Arrival = loadgen.Arrival(f.arrival)
	cfg.Load.Rate = f.rate
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
		cfg.Load.Rate = fmt.Sprintf("step:%v:%v:%v:%v", from, to, f.rateStep, f.stepDuration)
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
	return nil
}

// stdoutReporter selects the rendering printed on stdout.
func stdoutReporter(format string) (func(*loadgen.Result) loadgen.Reporter, error) {
	switch format {
	case "text":
		return loadgen.NewTextReporter, nil
	case "json":
		return loadgen.NewJSONReporter, nil
	case "csv":
		return loadgen.NewIntervalCSVReporter, nil
	case "summary-csv":
		return loadgen.NewSummaryCSVReporter, nil
	case "hgrm":
		return loadgen.NewPercentilesReporter, nil
	}
	return nil, fmt.Errorf("--format %q: want text, json, csv, summary-csv or hgrm", format)
}

// finish evaluates thresholds, writes the outputs, prints the report and
// returns the exit status, for load and report alike.
func finish(res *loadgen.Result, thresholds []string, format string, reporter func(*loadgen.Result) loadgen.Reporter, write func(*loadgen.Result) error) error {
	passed, err := loadgen.EvaluateThresholds(res, thresholds)
	if err != nil {
		return usageError("%v", err)
	}
	werr := write(res)
	if err := reporter(res)(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "oipkit: write report: %v\n", err)
	}
	if werr != nil {
		fmt.Fprintf(os.Stderr, "oipkit: %v\n", werr)
		return exitError{exitUsage}
	}
	code := exitPass
	switch {
	case res.EndReason != loadgen.EndCompleted:
		code = exitNotRun
	case res.Checks.GeneratorBound:
		code = exitInconclusive
	case !passed:
		code = exitFailed
	}
	if code != exitPass && format == "text" {
		fmt.Fprintf(os.Stderr, "oipkit: exit status %d (%s)\n", code, exitMeaning[code])
	}
	if code == exitPass {
		return nil
	}
	return exitError{code}
}

var exitMeaning = map[int]string{
	exitNotRun:       "the run did not complete",
	exitFailed:       "a threshold failed",
	exitInconclusive: "generator-bound: the load generator could not keep up; not a server result",
}

// writeOutputs writes the result files asked for with --output, --csv and
// --summary-csv.
func writeOutputs(res *loadgen.Result, f loadFlags) error {
	for _, o := range []struct {
		path string
		rep  loadgen.Reporter
	}{
		{f.output, loadgen.NewJSONReporter(res)},
		{f.csv, loadgen.NewIntervalCSVReporter(res)},
		{f.summaryCSV, loadgen.NewSummaryCSVReporter(res)},
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

func writeFile(path string, rep loadgen.Reporter) error {
	w, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep(w); err != nil {
		w.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return w.Close()
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
	fmt.Fprintf(os.Stderr, "oipkit: %s\n", fmt.Sprintf(format, args...))
	return exitError{exitUsage}
}
