package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/conformance"
	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/verdict"
)

func init() {
	register(command{Name: "conform", Summary: "run the OIP conformance suite against a server (default: the bundled reference server)", Run: runConform})
}

// ginkgoT receives ginkgo's overall pass/fail; the report decides the exit
// status, so it only has to exist.
type ginkgoT struct{ failed bool }

func (t *ginkgoT) Fail() { t.failed = true }

// conformMemoryLimit is the soft memory limit of a conform run (Go's
// GOMEMLIMIT, unless set in the environment). The suite's live heap stays
// under 32 MB, but at Go's default the collector lets garbage grow to as
// much again: the 6-8 MB answers of a hostile server, read and refused one
// after another, took a run with reports to 100 MB of RSS; at this limit,
// 84 MB. It only makes the collector run sooner near it: a run that needs
// more still gets it.
const conformMemoryLimit = 64 << 20

// conformDoc is conform's help text.
const conformDoc = `
Run the Open Inference Protocol conformance suite. With neither --http nor
--grpc it starts the bundled reference server on free loopback ports and
tests that.

The targets are identified first: one that is not an OIP server (a static
web server, another gRPC service, the gRPC port given as --http or the
reverse) stops the run within about two seconds with one line saying what
answered.

Every extension the suite knows is probed, advertised or not; an
extension's specs run when the server advertises it or the probe observed
it, unless --features names the extensions. Each requirement of the catalog
is reported as passed, failed, lenient, warning, skipped, not-run,
not-supported or not-covered. A failed check is a fail (the server broke a
rule the spec puts on servers), lenient (it accepted a request that breaks
a rule the spec puts on clients) or a warning (a difference stock clients
tolerate); lenient and warnings fail a profile only with --strict. After
the first call on a route that gets no answer in time, the specs needing
that route are reported not run instead of each waiting out --timeout.

The terminal shows a progress line, the profile verdicts, one line per
distinct defect (the checks that failed on one exchange: requirement,
statement, reason) and where the reports are; -v keeps ginkgo's full
stream and adds each defect's reproducer. 'oipkit report --findings
DIR/report.json' writes the defects as upstream bug reports.

Reports go to --report-dir (report.json, report.md, report.html: one
self-contained page with the evidence folded, and junit.xml); when
GITHUB_STEP_SUMMARY is set, a Markdown summary is appended to that file.
With --from report.json nothing runs: the report is read and written again
(report.md, report.html, junit.xml) into --report-dir, by default the
report's own directory, and its summary and exit status are those of the
run that wrote it.

Exit status: 0 every selected profile passed; 1 usage error; 2 the run
could not start or complete (unreachable target, not an OIP server, server
stopped answering, a route never answered); 3 a requirement failed (with
--strict also: a lenient or warning one); 4 inconclusive (specs were skipped,
e.g. a fixture model is not deployed).`

func runConform(ctx context.Context, args []string) error {
	fs, f := newConformFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if f.from != "" {
		return renderConformReport(fs, f.from, f.opts.ReportDir)
	}
	opts, err := f.options(fs)
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(conformMemoryLimit))
	}
	if opts.HTTPURL == "" && opts.GRPCAddr == "" {
		srv, err := startReference(ctx)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
		opts.HTTPURL, opts.GRPCAddr = srv.HTTPURL(), srv.GRPCAddr()
		fmt.Printf("oipkit conform: testing the bundled reference server at %s and %s\n", opts.HTTPURL, opts.GRPCAddr)
	}
	return runSuite(opts)
}

// conformFlags are conform's flags: the options the flag package fills
// directly, and those read from text.
type conformFlags struct {
	opts                     conformance.Options
	headers, profiles        multiFlag
	declared, features, from string
	tlsFiles                 client.TLSFiles
}

func newConformFlags() (*flag.FlagSet, *conformFlags) {
	fs := newFlagSet("conform", "conform [--http URL] [--grpc host:port] [flags]", conformDoc)
	f := &conformFlags{}
	opts := &f.opts
	fs.StringVar(&f.declared, "fixtures", "", "comma-separated fixture model `names` taken as deployed without discovering them, for a server whose models answer no metadata or readiness call (TorchServe); their inputs and outputs are the fixture contract's")
	fs.StringVar(&f.features, "features", "", "comma-separated `list` of supported extensions, overriding the advertised ones (\"none\" for no extension)")
	fs.StringVar(&opts.HTTPURL, "http", "", "REST base `URL` of the server under test")
	fs.StringVar(&opts.GRPCAddr, "grpc", "", "gRPC `host:port` of the server under test")
	fs.Var(&f.headers, "header", "`\"Key: Value\"` HTTP header / gRPC metadata sent with every call (repeatable)")
	fs.StringVar(&opts.Host, "host", "", "override the HTTP Host header and gRPC :authority")
	addTLSFlags(fs, &f.tlsFiles)
	fs.BoolVar(&opts.Strict, "strict", false, "fail profiles on lenient and warning findings too")
	fs.DurationVar(&opts.Timeout, "timeout", conformance.DefaultTimeout, "timeout of each call")
	// The caps on what the server sends, named as serve's limits; the
	// defaults keep a run under 100 MB whatever the server sends.
	fs.Int64Var(&opts.MaxResponseBytes, "max-body-bytes", conformance.DefaultMaxResponseBytes, "largest REST response body in `bytes` (a larger one fails its call, its excess unread)")
	fs.Int64Var(&opts.MaxResponseBytes, "max-response-bytes", conformance.DefaultMaxResponseBytes, "same as --max-body-bytes (its former name)")
	fs.Int64Var(&opts.MaxMessageBytes, "grpc-max-message-bytes", 0, "largest gRPC response message in `bytes`, counting what decoding it costs (default --max-body-bytes)")
	fs.Int64Var(&opts.MaxHeaderBytes, "max-header-bytes", client.DefaultMaxHeaderBytes, "largest response header block in `bytes` (HTTP/1.1 headers, HTTP/2 header list)")
	fs.StringVar(&opts.ReportDir, "report-dir", "conformance-report", "`directory` for report.json, report.md, report.html and junit.xml (\"\" writes none)")
	fs.StringVar(&f.from, "from", "", "run nothing: render the report `file` (report.json) again into --report-dir (default: its directory)")
	fs.Var(&f.profiles, "profile", "profile `name` whose verdict decides the exit status (repeatable; default all targeted)")
	fs.StringVar(&opts.ImplementationName, "name", "", "implementation name for the report (default: from server metadata)")
	fs.StringVar(&opts.LabelFilter, "label-filter", "", "extra ginkgo label filter `expression`, ANDed with the feature/transport filter")
	fs.BoolVar(&opts.Verbose, "v", false, "keep ginkgo's full stream (every spec as it runs, each failure in full) and print each defect's reproducer")
	fs.BoolVar(&opts.Verbose, "verbose", false, "the same as -v")
	return fs, f
}

// options checks the flags and reads those given as text into the suite's
// options; a mistake is a usage error.
func (f *conformFlags) options(fs *flag.FlagSet) (conformance.Options, error) {
	opts := f.opts
	for name, v := range map[string]int64{"--max-body-bytes": opts.MaxResponseBytes, "--max-header-bytes": opts.MaxHeaderBytes} {
		if v <= 0 {
			return opts, fmt.Errorf("%w: %s must be positive, got %d", errUsage, name, v)
		}
	}
	if opts.MaxMessageBytes < 0 {
		return opts, fmt.Errorf("%w: --grpc-max-message-bytes must be positive (or 0: --max-body-bytes), got %d", errUsage, opts.MaxMessageBytes)
	}
	var err error
	if opts.Header, err = client.ParseHeaders(f.headers); err != nil {
		return opts, fmt.Errorf("%w: --header: %v", errUsage, err)
	}
	if opts.TLS, err = f.tlsFiles.Config(); err != nil {
		return opts, fmt.Errorf("%w: %v", errUsage, err)
	}
	if opts.TLS != nil && strings.HasPrefix(opts.HTTPURL, "http://") {
		return opts, fmt.Errorf("%w: TLS flags with the plain http:// URL %s: use https://", errUsage, opts.HTTPURL)
	}
	for _, p := range f.profiles {
		opts.Profiles = append(opts.Profiles, strings.Split(p, ",")...)
	}
	if flagSet(fs, "features") {
		opts.Features = []conformance.Feature{}
	}
	if opts.DeclaredFixtures, err = conformance.ParseFixtures(f.declared); err != nil {
		return opts, fmt.Errorf("%w: --fixtures: %v", errUsage, err)
	}
	if f.features != "" && f.features != "none" {
		if opts.Features, err = conformance.ParseFeatures(f.features); err != nil {
			return opts, fmt.Errorf("%w: --features: %v", errUsage, err)
		}
	}
	return opts, nil
}

// runSuite runs the suite, prints its summary and returns the exit
// status of its verdict.
func runSuite(opts conformance.Options) error {
	opts.StepSummary = os.Getenv(conformance.EnvStepSummary)
	if !opts.Verbose {
		opts.Progress = os.Stdout
	}
	rep, err := conformance.Run(&ginkgoT{}, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "oipkit conform: %v\n", err)
		if rep == nil {
			return exitError{verdict.ExitNotRun}
		}
	}
	fmt.Println()
	summary := report.WriteText
	if opts.Verbose {
		summary = report.WriteTextWithReproducers
	}
	if werr := summary(os.Stdout, rep); werr != nil {
		return werr
	}
	if opts.ReportDir != "" {
		fmt.Printf("reports written to %s (report.json, report.md, report.html, junit.xml)\n", opts.ReportDir)
	}
	if code := rep.ExitCode(); code != verdict.ExitPass {
		return exitError{code}
	}
	return nil
}

// renderConformReport is conform --from: it reads a report and writes it
// again into dir (default: the report's directory), prints its summary and
// returns the exit status of its verdicts.
func renderConformReport(fs *flag.FlagSet, path, dir string) error {
	var conflict []string
	dirSet := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "from":
		case "report-dir":
			dirSet = true
		default:
			conflict = append(conflict, "--"+f.Name)
		}
	})
	if len(conflict) > 0 {
		return fmt.Errorf("%w: --from runs nothing; %s cannot be used with it", errUsage, strings.Join(conflict, ", "))
	}
	rep, err := report.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: --from: %v", errUsage, err)
	}
	if !dirSet {
		dir = filepath.Dir(path)
	}
	if dir != "" {
		if err := conformance.WriteReports(dir, rep); err != nil {
			return err
		}
	}
	if err := report.WriteText(os.Stdout, rep); err != nil {
		return err
	}
	if dir != "" {
		fmt.Printf("reports written to %s (report.json, report.md, report.html, junit.xml)\n", dir)
	}
	if code := rep.ExitCode(); code != verdict.ExitPass {
		return exitError{code}
	}
	return nil
}

// startReference starts the bundled reference server on free loopback ports.
func startReference(ctx context.Context) (*reference.Server, error) {
	cfg := reference.DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	srv, err := reference.New(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("reference server: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Start(sctx); err != nil {
		return nil, fmt.Errorf("reference server: %w", err)
	}
	return srv, nil
}
