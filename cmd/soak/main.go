// Command soak runs the reference server under a steady mixed load for a
// long time and fails when its memory, goroutines or open files grow: the
// check behind `make soak` (30 minutes, results in reports/soak/) and
// `make soak-ci` (2 minutes, in bin/soak-ci/, run by .ci/run). It lives in
// cmd/ beside pagecheck, not in bench/ or scripts/: it is a check the
// Makefile runs and CI gates on, with its own tests, not a benchmark or a
// helper of a shell script.
//
// It starts `oipkit serve` as a subprocess on free loopback ports and
// drives it with the client package, every workload at a modest fixed rate
// (about 300 requests/s together, so a shared 2-core machine is not
// saturated): REST JSON, REST binary, gRPC typed and raw inference
// (add_sub, identity_*); ModelStreamInfer streams of tokens and
// stream_count; accumulate sequences over REST and gRPC with uint64 and
// string ids; REST generate and generate_stream of text_gen; repository
// unload/load churn of repo_target (and a request to it while unloaded,
// whose NOT_FOUND is expected); system shared memory create, register,
// infer, unregister, remove; and a client that opens a new connection every
// second, makes one request and closes it. Every answer is checked against
// the fixture oracle; an unexpected error or a wrong answer fails the soak.
//
// Every -interval (5 s) it samples the server process: VmRSS and Threads of
// /proc/<pid>/status, the entries of /proc/<pid>/fd, and go_goroutines,
// go_memstats_heap_inuse_bytes and go_memstats_heap_objects of its
// /metrics. After a warm-up (the first 20% of the run, at least 30 s) the
// bounds are (Rules in verdict.go):
//
//   - rss fails when its least-squares slope exceeds max(10% of its level,
//     20 MiB) per hour and the fitted rise over the window exceeds
//     max(4 × its standard error, 8 MiB);
//   - heap_inuse likewise with max(10%, 10 MiB) per hour and 4 MiB;
//   - goroutines fails when the median of the last quarter of the samples
//     exceeds the warm-up's median + 20; open_files likewise + 10;
//   - threads and heap_objects are reported, not judged (Go keeps the
//     threads it made).
//
// The second condition of a trend makes a short run judge only what it can
// tell from its noise and from a process settling: the floors are the
// hourly bounds over the 24 minutes a 30-minute run measures, so 30
// minutes catch a leak of 20 MiB an hour and 2 minutes only a gross one
// (8 MiB in 90 s).
//
// It writes soak.md (verdicts, workloads), soak.json (everything),
// samples.csv, soak.html (the series, drawn with htmlpage) and soak.png (a
// headless chromium screenshot; skipped with a note when chromium is
// missing) into -out, prints one line per series with its slope and bound,
// and exits with cmd/oipkit's statuses: 0 passed, 1 bad flags, 2 the server
// or the soak could not run, 3 a bound was exceeded or a request failed.
//
//	soak [-duration 30m] [-interval 5s] [-oipkit bin/oipkit] [-out reports/soak]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oipkit/oipkit/verdict"
)

func main() {
	duration := flag.Duration("duration", 30*time.Minute, "how long the load runs")
	interval := flag.Duration("interval", 5*time.Second, "time between two samples of the server process")
	oipkit := flag.String("oipkit", "bin/oipkit", "the oipkit binary whose serve is soaked")
	out := flag.String("out", "reports/soak", "`directory` for soak.md, soak.json, samples.csv, soak.html and soak.png")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: soak [-duration 30m] [-interval 5s] [-oipkit bin/oipkit] [-out reports/soak]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || *duration < time.Minute || *interval <= 0 || *interval > *duration/20 {
		fmt.Fprintln(os.Stderr, "soak: want no arguments, -duration of at least 1m and -interval of at most a twentieth of it")
		os.Exit(verdict.ExitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, config{duration: *duration, interval: *interval, oipkit: *oipkit})
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		if res == nil {
			os.Exit(verdict.ExitNotRun)
		}
	}
	if werr := write(context.Background(), *out, res); werr != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", werr)
		os.Exit(verdict.ExitNotRun)
	}
	for _, line := range res.summaryLines() {
		fmt.Println(line)
	}
	switch {
	case err != nil && !errors.Is(err, errFailed):
		os.Exit(verdict.ExitNotRun)
	case !res.Pass:
		os.Exit(verdict.ExitFailed)
	}
	os.Exit(verdict.ExitPass)
}
