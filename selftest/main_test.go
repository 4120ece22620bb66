package selftest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oipkit/oipkit/conformance/report"
)

// oipkit is the path of the binary under test, built once by TestMain.
var oipkit string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "oipkit-selftest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	oipkit = filepath.Join(dir, "oipkit")
	build := exec.Command("go", "build", "-o", oipkit, "github.com/oipkit/oipkit/cmd/oipkit")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "selftest: build oipkit: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// conformRun is one finished `oipkit conform` process.
type conformRun struct {
	exit    int
	output  string
	elapsed time.Duration
	report  *report.ConformanceReport // nil when none was written
	dir     string                    // the report directory
}

// conform runs `oipkit conform args... --report-dir <tmp>` and reads the
// JSON report back.
func conform(t *testing.T, args ...string) conformRun {
	t.Helper()
	return conformEnv(t, nil, args...)
}

// conformEnv is conform with extra environment variables ("K=V").
func conformEnv(t *testing.T, env []string, args ...string) conformRun {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(oipkit, append([]string{"conform", "--report-dir", dir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	run := conformRun{output: out.String(), elapsed: time.Since(start), dir: dir}
	if ee, ok := err.(*exec.ExitError); ok {
		run.exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run oipkit conform: %v", err)
	}
	if rep, err := report.ReadFile(filepath.Join(dir, "report.json")); err == nil {
		run.report = rep
	}
	return run
}
