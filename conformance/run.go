package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/oipkit/oipkit/reports"
)

// SuiteDescription is the ginkgo suite name.
const SuiteDescription = "OIP conformance"

// ErrAlreadyRun is returned by a second call to [Run] in one process: ginkgo
// runs a spec tree once per process.
var ErrAlreadyRun = errors.New("conformance: Run may be called only once per process")

var (
	ran         atomic.Bool
	suiteReport types.Report
)

var _ = BeforeSuite(func(ctx SpecContext) {
	if tgt == nil {
		return
	}
	if err := tgt.discoverFixtures(ctx); err != nil {
		tgt.problems = append(tgt.problems, "fixture discovery: "+err.Error())
	}
})

var _ = ReportAfterSuite("oipkit conformance report", func(r Report) {
	suiteReport = r
})

// Run runs the conformance suite against the targets of opts and returns the
// report, which it also writes to opts.ReportDir (report.json, report.md,
// junit.xml) when that is set. t receives ginkgo's pass/fail: a *testing.T,
// or an adapter in the CLI.
//
// Run first checks that every target answers; a target where nothing
// listens fails in seconds with an error wrapping [ErrUnreachable] and no
// specs run. A run that ends early (the server stopped answering) returns
// the partial report with Incomplete set. Run may be called once per
// process.
func Run(t GinkgoTestingT, opts Options) (*reports.ConformanceReport, error) {
	if ran.Swap(true) {
		return nil, ErrAlreadyRun
	}
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*opts.Timeout+5*time.Second)
	tgt, err = connect(ctx, opts)
	cancel()
	if err != nil {
		return nil, err
	}
	if opts.ReportDir != "" {
		if err := os.MkdirAll(opts.ReportDir, 0o755); err != nil {
			return nil, fmt.Errorf("report dir: %w", err)
		}
	}

	suiteConfig, reporterConfig := GinkgoConfiguration()
	filters := []string{LabelFilter(tgt.featureList(), opts.transports())}
	for _, f := range []string{suiteConfig.LabelFilter, opts.LabelFilter} {
		if strings.TrimSpace(f) != "" {
			filters = append(filters, "("+f+")")
		}
	}
	suiteConfig.LabelFilter = strings.Join(filters, " && ")
	if opts.Verbose {
		reporterConfig.Verbose = true
		reporterConfig.Succinct = false
	}
	reporterConfig.JUnitReport, reporterConfig.JSONReport = "", ""
	if fi, err := os.Stdout.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
		reporterConfig.NoColor = true
	}

	RunSpecs(t, SuiteDescription, suiteConfig, reporterConfig)

	rep := buildReport(suiteReport, tgt, start)
	if opts.ReportDir != "" {
		if err := writeReports(opts.ReportDir, rep, suiteReport); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// writeReports writes the JSON report, its Markdown rendering and ginkgo's
// JUnit XML into dir.
func writeReports(dir string, rep *reports.ConformanceReport, r types.Report) error {
	if err := reports.WriteFile(filepath.Join(dir, "report.json"), rep); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	if err := reports.WriteMarkdown(f, rep); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	if err := reporters.GenerateJUnitReport(r, filepath.Join(dir, "junit.xml")); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	return nil
}
