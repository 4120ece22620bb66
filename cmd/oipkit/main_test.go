package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestRunDispatch(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{nil, 1},
		{[]string{"bogus"}, 1},
		{[]string{"--help"}, 0},
		{[]string{"help"}, 0},
		{[]string{"help", "serve"}, 0},
		{[]string{"help", "bogus"}, 1},
		{[]string{"version"}, 0},
		{[]string{"serve", "-h"}, 0},
		{[]string{"serve", "--no-such-flag"}, 1},
		{[]string{"serve", "--log-level", "loud"}, 1},
		{[]string{"serve", "--max-body-bytes", "-1"}, 1},
		{[]string{"serve", "extra-argument"}, 1},
		{[]string{"serve", "--http", "", "--grpc", ""}, 1},
	} {
		var stdout, stderr bytes.Buffer
		if got := run(context.Background(), c.args, &stdout, &stderr); got != c.code {
			t.Errorf("oipkit %q: exit %d, want %d (stderr %q)", c.args, got, c.code, stderr.String())
		}
	}
}

func TestUsageListsCommands(t *testing.T) {
	var out bytes.Buffer
	usage(&out)
	for name := range commands {
		if !strings.Contains(out.String(), "  "+name+" ") {
			t.Errorf("usage does not list %q:\n%s", name, out.String())
		}
	}
}

// TestServeStopsOnSignalContext runs serve on free ports and cancels its
// context, as SIGINT would: it must shut down and exit 0.
func TestServeStopsOnSignalContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--log-level", "error"}, &stdout, &stderr)
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeAcceptsAURL(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:8000": "127.0.0.1:8000", "http://127.0.0.1:8000": "127.0.0.1:8000",
		"http://127.0.0.1:8000/": "127.0.0.1:8000"} {
		if got, err := listenAddress(in); err != nil || got != want {
			t.Errorf("listenAddress(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"https://127.0.0.1:8000", "http://127.0.0.1:8000/prefix"} {
		if _, err := listenAddress(in); err == nil {
			t.Errorf("listenAddress(%q) accepted", in)
		}
	}
}
