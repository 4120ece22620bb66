package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/oipkit/oipkit/htmlpage/browser"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/verdict"
)

// checkInBrowser opens page in headless chromium and fails the test on any
// console error, exception or network fetch, or when fewer than minCharts
// charts were drawn.
func checkInBrowser(t *testing.T, page string, minCharts int) {
	t.Helper()
	rep := openInBrowser(t, page, browser.Options{})
	if rep.Charts < minCharts {
		t.Errorf("%s: %d charts drawn, want at least %d", page, rep.Charts, minCharts)
	}
}

// openInBrowser opens page in headless chromium with o and fails the test
// on any console error, exception or network fetch. The screenshot goes to
// $OIPKIT_SCREENSHOT_DIR when set (make test keeps them in bin/screenshots),
// else to the test's temp dir. Without chromium it skips, unless
// OIPKIT_REQUIRE_BROWSER is set.
func openInBrowser(t *testing.T, page string, o browser.Options) *browser.Report {
	t.Helper()
	if _, err := browser.Executable(); errors.Is(err, browser.ErrNoBrowser) {
		if os.Getenv("OIPKIT_REQUIRE_BROWSER") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := os.Getenv("OIPKIT_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, t.Name()+".png")
	rep, err := browser.Check(context.Background(), page, shot, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("%s: %s", page, p)
	}
	t.Logf("%s: %d charts, screenshot %s", page, rep.Charts, shot)
	return rep
}

// A concurrency sweep against the reference server writes one row per
// level and a page whose curves draw in a real browser.
func TestBrowserLoadSweepHTML(t *testing.T) {
	srv := referencetest.Start(t)
	page := filepath.Join(t.TempDir(), "sweep.html")
	args := []string{"load", "--grpc", srv.GRPCAddr(), "--model", "add_sub", "--concurrency-range", "1:4:x2",
		"--duration", "600ms", "--interval", "200ms", "--html", page, "--progress", "never"}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != verdict.ExitPass {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// Latency and traffic over time, the curve, the spectrum.
	checkInBrowser(t, page, 4)
}

// The committed runtime load results, overlaid.
func TestBrowserReportOverlay(t *testing.T) {
	files, _ := filepath.Glob("../../reports/runtimes/*/load-*.json")
	if len(files) < 2 {
		t.Skip("no committed runtime results")
	}
	page := filepath.Join(t.TempDir(), "runtimes.html")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"report", "--html", page}, files...), &stdout, &stderr); code != verdict.ExitPass {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// The spectrum and p99 overlays, and the two time charts of each run
	// that has intervals (a run that never started has none).
	want := 2
	for _, f := range files {
		if len(readResult(t, f).Intervals) > 0 {
			want += 2
		}
	}
	checkInBrowser(t, page, want)
}
