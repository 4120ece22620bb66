package oiptarget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/merge"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// newTargetErr makes a target for cfg and returns the error, failing the
// test if it took the whole context (i.e. waited out the readiness
// timeout instead of failing fast).
func newTargetErr(t *testing.T, cfg loadgen.Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tg, err := NewTarget(ctx, cfg)
	if err == nil {
		tg.Close()
		return nil
	}
	if ctx.Err() != nil {
		t.Fatalf("NewTarget waited until the test's deadline: %v", err)
	}
	return err
}

// A wrong port fails at once with the likely mistake, not after the
// readiness timeout.
func TestReadinessFailsFast(t *testing.T) {
	srv := referencetest.Start(t)
	cfg := loadgen.Config{Target: loadgen.TargetConfig{HTTP: srv.GRPCAddr(), Model: "add_sub", ReadyTimeout: loadgen.Duration(time.Minute)}}
	err := newTargetErr(t, cfg)
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, client.ErrNotOIP) || !strings.Contains(err.Error(), "--grpc") {
		t.Errorf("--http at the gRPC port: %v", err)
	}
	cfg = loadgen.Config{Target: loadgen.TargetConfig{GRPC: strings.TrimPrefix(srv.HTTPURL(), "http://"), Model: "add_sub", ReadyTimeout: loadgen.Duration(time.Minute)}}
	if err := newTargetErr(t, cfg); !errors.Is(err, client.ErrNotOIP) || !strings.Contains(err.Error(), "--http") {
		t.Errorf("--grpc at the REST port: %v", err)
	}
	cfg = loadgen.Config{Target: loadgen.TargetConfig{HTTP: "127.0.0.1:1", Model: "add_sub", ReadyTimeout: loadgen.Duration(time.Minute)}}
	if err := newTargetErr(t, cfg); !errors.Is(err, client.ErrUnreachable) {
		t.Errorf("nothing listening: %v", err)
	}
}

// fakeOIP serves the REST routes the generator reads before a run, with
// model metadata written by meta.
func fakeOIP(t *testing.T, ready func() bool, meta func(w io.Writer)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v2/health/live":
		case "/v2/health/ready", "/v2/models/m/ready":
			if ready != nil && !ready() {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"error":"warming up"}`)
			}
		case "/v2":
			fmt.Fprint(w, `{"name":"fake","version":"1","extensions":[]}`)
		case "/v2/models/m":
			meta(w)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Model metadata is read with caps on size and counts: a metadata listing
// a million inputs fails with a clear error, without the generator reading
// it all.
func TestMetadataIsBounded(t *testing.T) {
	inputs := func(n int) func(io.Writer) {
		return func(w io.Writer) {
			fmt.Fprint(w, `{"name":"m","platform":"x","inputs":[`)
			for i := range n {
				if i > 0 {
					fmt.Fprint(w, ",")
				}
				fmt.Fprintf(w, `{"name":"i%d","datatype":"FP32","shape":[1]}`, i)
			}
			fmt.Fprint(w, `],"outputs":[]}`)
		}
	}
	cfg := func(url string) loadgen.Config {
		return loadgen.Config{Target: loadgen.TargetConfig{HTTP: url, Model: "m"}}
	}

	err := newTargetErr(t, cfg(fakeOIP(t, nil, inputs(2000))))
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "lists 2000 inputs") {
		t.Errorf("2000 inputs: %v", err)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err = newTargetErr(t, cfg(fakeOIP(t, nil, inputs(1_000_000)))) // about 45 MB of JSON
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("a million inputs: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("reading the oversized metadata allocated %d MB", grew>>20)
	}

	err = newTargetErr(t, cfg(fakeOIP(t, nil, func(w io.Writer) {
		fmt.Fprintf(w, `{"name":"m","inputs":[{"name":"x","datatype":"FP32","shape":[%s1]}],"outputs":[]}`, strings.Repeat("1,", 100))
	})))
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "101 dimensions") {
		t.Errorf("101 dimensions: %v", err)
	}
}

// The readiness wait says what it waits for while it waits.
func TestReadinessProgress(t *testing.T) {
	var calls atomic.Int64
	readyAt := time.Now().Add(2500 * time.Millisecond)
	url := fakeOIP(t, func() bool { calls.Add(1); return time.Now().After(readyAt) }, func(w io.Writer) {
		fmt.Fprint(w, `{"name":"m","inputs":[{"name":"x","datatype":"FP32","shape":[1]}],"outputs":[]}`)
	})
	var told []string
	cfg := loadgen.Config{Target: loadgen.TargetConfig{HTTP: url, Model: "m", ReadyTimeout: loadgen.Duration(time.Minute),
		ReadyProgress: func(waited time.Duration, why string) { told = append(told, why) }}}
	if err := newTargetErr(t, cfg); err != nil {
		t.Fatal(err)
	}
	if len(told) == 0 || !strings.Contains(told[0], "503: warming up") {
		t.Errorf("progress %q after %d probes", told, calls.Load())
	}
}

// Results committed by earlier versions still load, with their
// histograms.
func TestReadsCommittedResults(t *testing.T) {
	files, _ := filepath.Glob("../reports/runtimes/*/load-*.json")
	if len(files) == 0 {
		t.Skip("no committed load results")
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := loadgen.ReadResult(fh)
		fh.Close()
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if r.Histograms.Response.Count() != r.Counts.OK+r.Counts.Timeouts || (r.Counts.OK > 0 && r.Latency.Response.P99 == 0) ||
			r.Histograms.Failed.Count() != r.Counts.Errors {
			t.Errorf("%s: %d values for %d requests", f, r.Histograms.Response.Count(), r.Counts.OK)
		}
	}
	if _, err := loadgen.ReadResult(strings.NewReader(`{"apiVersion":"loadgen.oipkit.dev/v2","kind":"LoadResult"}`)); err == nil ||
		!strings.Contains(err.Error(), "loadgen.oipkit.dev/v2") {
		t.Errorf("a future apiVersion: %v", err)
	}
}

func TestDifferencesAndForcedMerge(t *testing.T) {
	a := loadgen.NewResult(loadgen.Config{Target: loadgen.TargetConfig{Protocol: client.ProtocolGRPCRaw, Model: "m"}, Load: loadgen.LoadConfig{Concurrency: 4}})
	b := loadgen.NewResult(loadgen.Config{Target: loadgen.TargetConfig{Protocol: client.ProtocolHTTP, Model: "m"}, Load: loadgen.LoadConfig{Concurrency: 4}})
	a.EndReason, b.EndReason = loadgen.EndCompleted, loadgen.EndCompleted
	a.Target = &loadgen.TargetInfo{}
	a.Target.Server.Name = "mlserver"
	if d := loadgen.Differences(a, a); len(d) != 0 {
		t.Errorf("a result differs from itself: %v", d)
	}
	d := loadgen.Differences(a, b)
	if len(d) != 2 || !strings.HasPrefix(d[0], "protocol (grpc-raw vs http)") || !strings.HasPrefix(d[1], "server (mlserver vs none)") {
		t.Errorf("differences %q", d)
	}
	a.Sources, b.Sources = []string{"a.json"}, []string{"b.json"}
	m, err := merge.Merge(a, b)
	if err != nil || len(m.MergedDiffer) != 2 {
		t.Fatalf("merge: %v, differ %v", err, m.MergedDiffer)
	}
	// How the text shows it: render's TestTextOfAForcedMerge.
}
