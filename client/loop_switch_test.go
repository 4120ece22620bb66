package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/oiptarget"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// TestLoopReferenceRun: a closed loop through an OIPTarget against the
// reference server completes with every request ok, with the event loop on
// or (in a child process, by the switch) off.
func TestLoopReferenceRun(t *testing.T) {
	srv := referencetest.Start(t)
	cfg := loadgen.Config{
		Target: loadgen.TargetConfig{HTTP: srv.HTTPURL(), Protocol: client.ProtocolHTTP, Model: "add_sub"},
		Load:   loadgen.LoadConfig{Concurrency: 4, Requests: 400, Interval: loadgen.Duration(250 * time.Millisecond)},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := oiptarget.NewTarget(ctx, cfg)
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	defer tg.Close()
	res, err := loadgen.Run(ctx, tg, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Counts.Sent != 400 || res.Counts.OK != 400 || res.Counts.Errors != 0 || res.Counts.Timeouts != 0 {
		t.Errorf("event loop %v: counts %+v, want 400 sent and ok", client.EventLoop(), res.Counts)
	}
}

// TestLoopSwitchedOff: with OIPKIT_EVENT_LOOP=off, EventLoop is false,
// REST.Loop refuses to run and loadgen traffic still flows.
func TestLoopSwitchedOff(t *testing.T) {
	if !client.EventLoop() {
		s, _, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
		c := loopClient(t, s.URL, false, client.Options{Connections: 2, Timeout: 5 * time.Second})
		if err := c.Loop(context.Background(), 1, newLoopDriver(prepareLoop(t, c, -1), 1, 1, 0)); !errors.Is(err, client.ErrNoEventLoop) {
			t.Fatalf("switched off: Loop = %v, want ErrNoEventLoop", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^(TestLoopSwitchedOff|TestLoopReferenceRun)$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), client.EnvEventLoop+"=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with %s=off: %v\n%s", client.EnvEventLoop, err, out)
	}
	for _, want := range []string{"--- PASS: TestLoopSwitchedOff", "--- PASS: TestLoopReferenceRun"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("with %s=off: no %q in:\n%s", client.EnvEventLoop, want, out)
		}
	}
}
