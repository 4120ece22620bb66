package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/conformance/report"
	_ "github.com/oipkit/oipkit/conformance/suite" // the specs
)

// SuiteDescription is the ginkgo suite name.
const SuiteDescription = "OIP conformance"

// ErrAlreadyRun is returned by a second call to [Run] in one process: ginkgo
// runs a spec tree once per process.
var ErrAlreadyRun = errors.New("conformance: Run may be called only once per process")

// The identification errors [Run] returns, from client.Identify: nothing
// answers at an address, or what answers is not an OIP server.
var (
	ErrUnreachable = client.ErrUnreachable
	ErrNotOIP      = client.ErrNotOIP
)

var (
	ran         atomic.Bool
	suiteReport types.Report
)

var _ = ReportAfterSuite("oipkit conformance report", func(r Report) {
	suiteReport = r
})

// Run runs the conformance suite against the targets of opts and returns the
// report, which it also writes to opts.ReportDir (report.json, report.md,
// report.html, junit.xml) and appends to opts.StepSummary when those are set. t receives
// ginkgo's pass/fail: a *testing.T, or an adapter in the CLI.
//
// Run first identifies every target: one where nothing listens, or one that
// is not an OIP server (a static web server, another gRPC service, the gRPC
// port given as the HTTP target), fails within about two seconds with an
// error wrapping [ErrUnreachable] or [ErrNotOIP], and no spec runs. A run
// that could not check everything (the server stopped answering, a route
// never answered) returns its report with Incomplete set. Run may be called
// once per process.
func Run(t GinkgoTestingT, opts Options) (*report.ConformanceReport, error) {
	if ran.Swap(true) {
		return nil, ErrAlreadyRun
	}
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	tgt, err := engine.Connect(context.Background(), opts.engineConfig())
	if err != nil {
		return nil, err
	}
	defer tgt.Close()
	if opts.ReportDir != "" {
		if err := os.MkdirAll(opts.ReportDir, 0o755); err != nil {
			return nil, fmt.Errorf("report dir: %w", err)
		}
	}

	suiteConfig, reporterConfig := GinkgoConfiguration()
	filters := []string{engine.LabelFilter(tgt.FeatureList(), tgt.Transports())}
	for _, f := range []string{suiteConfig.LabelFilter, opts.LabelFilter} {
		if strings.TrimSpace(f) != "" {
			filters = append(filters, "("+f+")")
		}
	}
	suiteConfig.LabelFilter = strings.Join(filters, " && ")
	// One order for every run of a suite version: a finding that depends on
	// the order of specs (a server whose state one spec changes) then shows
	// the same way each time, and two reports of one server compare.
	suiteConfig.RandomSeed = 1
	if opts.Verbose {
		reporterConfig.Verbose = true
		reporterConfig.Succinct = false
	}
	reporterConfig.JUnitReport, reporterConfig.JSONReport = "", ""
	if fi, err := os.Stdout.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
		reporterConfig.NoColor = true
	}

	if !opts.Verbose {
		// ginkgo's stream repeats every failure with source paths and
		// node names; the summary and the reports say it for a reader.
		stdout := formatter.ColorableStdOut
		formatter.ColorableStdOut = io.Discard
		defer func() { formatter.ColorableStdOut = stdout }()
	}
	startProgress(opts.Progress)
	RunSpecs(t, SuiteDescription, suiteConfig, reporterConfig)
	endProgress()

	rep := buildReport(suiteReport, tgt, opts, start)
	if opts.ReportDir != "" {
		if err := WriteReports(opts.ReportDir, rep); err != nil {
			return rep, err
		}
	}
	if opts.StepSummary != "" {
		if err := appendStepSummary(opts.StepSummary, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// WriteReports writes a report into dir as report.json, its Markdown and
// HTML renderings (report.md, report.html) and JUnit XML (junit.xml): what
// a run writes to Options.ReportDir, and what `oipkit conform --from`
// writes again from a report.json.
func WriteReports(dir string, rep *report.ConformanceReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report dir: %w", err)
	}
	jsonPath := filepath.Join(dir, "report.json")
	if err := report.WriteFile(jsonPath, rep); err != nil {
		return err
	}
	// The renderings are made from the report as written: JSON keeps
	// strings as valid UTF-8 (a server's non-UTF-8 bytes quoted in evidence
	// become U+FFFD), so report.md and report.html are what `oipkit conform
	// --from report.json` renders, byte for byte.
	rep, err := report.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "report.md"), func(f *os.File) error { return report.WriteMarkdown(f, rep) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "report.html"), func(f *os.File) error { return report.WriteHTML(f, rep, Cite) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "junit.xml"), func(f *os.File) error { return WriteJUnit(f, rep) })
}

// Cite looks a requirement up in the catalog: its level, statement and
// the source it was derived from, for the citations of the reports.
func Cite(id string) (report.Citation, bool) {
	q, ok := engine.Catalog().Get(id)
	return report.Citation{Level: string(q.Level), Statement: q.Statement, Source: q.Source}, ok
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// appendStepSummary appends the Markdown step summary to path (the file
// GitHub Actions names in GITHUB_STEP_SUMMARY).
func appendStepSummary(path string, rep *report.ConformanceReport) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	if err := WriteStepSummary(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("step summary: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	return nil
}
