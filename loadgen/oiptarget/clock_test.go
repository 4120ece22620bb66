package oiptarget

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/reference/referencetest"
)

// skewedServer answers every request with a Date header from a clock
// offset from this process's by offset, dated when it answers (as Go's
// net/http dates answers).
func skewedServer(t *testing.T, offset time.Duration) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().Add(offset).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestClockOffsetFromDateHeader: the estimate brackets the true offset of
// a server's clock, whatever it is, within the precision it claims — the
// bracket is exact arithmetic on whole-second dates and local send and
// receive times — and a few rounds narrow it far below a second.
func TestClockOffsetFromDateHeader(t *testing.T) {
	for _, offset := range []time.Duration{1234567 * time.Microsecond, -300 * time.Millisecond, 0, -7*time.Second - 999*time.Millisecond} {
		t.Run(offset.String(), func(t *testing.T) {
			t.Parallel()
			tg := &OIPTarget{cfg: loadgen.TargetConfig{HTTP: skewedServer(t, offset)}}
			c := tg.EstimateClockOffset(context.Background(), time.Now().Add(4*time.Second))
			if c.Error != "" {
				t.Fatalf("no estimate: %s", c.Error)
			}
			if d := c.Offset.D() - offset; d < -c.Precision.D() || d > c.Precision.D() {
				t.Errorf("estimate %v misses the true offset %v by %v", c, offset, d)
			}
			if c.Precision.D() > 250*time.Millisecond || c.Probes < 2 {
				t.Errorf("estimate %v: no narrowing round ran", c)
			}
		})
	}
}

func TestClockOffsetWithoutADate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http then sends none
	}))
	defer srv.Close()
	tg := &OIPTarget{cfg: loadgen.TargetConfig{HTTP: srv.URL}}
	c := tg.EstimateClockOffset(context.Background(), time.Now().Add(2*time.Second))
	if !strings.Contains(c.Error, "no Date header") || c.Probes != 1 {
		t.Errorf("a server without Date headers: %+v", c)
	}

	// The reference server's gRPC answers carry no date either.
	ref := referencetest.Start(t)
	cfg := grpcConfig(ref.GRPCAddr(), "add_sub")
	cfg.Load.Concurrency = 1
	ctx := context.Background()
	g, err := NewTarget(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c = g.EstimateClockOffset(ctx, time.Now().Add(2*time.Second))
	if !strings.Contains(c.Error, "gRPC answers carry no Date header") {
		t.Errorf("the reference server over gRPC: %+v", c)
	}
	if s := c.String(); !strings.HasPrefix(s, "no estimate: ") {
		t.Errorf("String() = %q", s)
	}
}

// TestClockOffsetContradiction: answers whose dates cannot all be true (a
// clock that jumps back and forth) give no estimate rather than a wrong
// one.
func TestClockOffsetContradiction(t *testing.T) {
	n := 0
	probe := func(context.Context) (time.Time, time.Time, time.Time, error) {
		n++
		now := time.Now()
		d := now.Truncate(time.Second)
		if n%2 == 0 {
			d = d.Add(-10 * time.Second)
		}
		return d, now, now.Add(time.Microsecond), nil
	}
	c := estimateOffset(context.Background(), probe, "test", time.Now().Add(3*time.Second))
	if !strings.Contains(c.Error, "contradict") {
		t.Errorf("contradicting dates: %+v", c)
	}
}
