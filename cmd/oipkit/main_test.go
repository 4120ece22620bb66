package main

import (
	"bytes"
	"context"
	"math"
	"net"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
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
		{[]string{"serve", "--gc-percent", "0"}, 1},
		{[]string{"serve", "--memory-limit", "-1"}, 1},
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
	code, stderr := serveWhile(t, []string{"--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--log-level", "error"},
		func() { time.Sleep(100 * time.Millisecond) })
	if code != 0 {
		t.Fatalf("serve exited %d: %s", code, stderr)
	}
}

// serveWhile runs `oipkit serve args` while during runs, then cancels its
// context as SIGINT would and returns its exit code and standard error.
func serveWhile(t *testing.T, args []string, during func()) (code int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var stdout, errBuf bytes.Buffer
	go func() { done <- run(ctx, append([]string{"serve"}, args...), &stdout, &errBuf) }()
	during()
	cancel()
	select {
	case code = <-done:
		return code, errBuf.String()
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
		return 0, ""
	}
}

// TestServeGCPercent checks the server process's GOGC while serve runs:
// --gc-percent, else serveGCPercent unless GOGC is set in the environment
// (then the runtime's own value stays), and the value before serve once it
// returns.
func TestServeGCPercent(t *testing.T) {
	gcPercent := func() int64 {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return int64(p)
	}
	testServeRuntimeSetting(t, "GOGC", gcPercent, []serveSettingCase{
		{"", nil, serveGCPercent},
		{"", []string{"--gc-percent", "150"}, 150},
		{"50", nil, gcPercent()},
		{"50", []string{"--gc-percent", "150"}, 150},
	})
}

// TestServeMemoryLimit checks the server process's soft memory limit the
// same way: --memory-limit (0: none), else serveMemoryLimit unless GOMEMLIMIT
// is set in the environment.
func TestServeMemoryLimit(t *testing.T) {
	memoryLimit := func() int64 { return debug.SetMemoryLimit(-1) }
	testServeRuntimeSetting(t, "GOMEMLIMIT", memoryLimit, []serveSettingCase{
		{"", nil, serveMemoryLimit},
		{"", []string{"--memory-limit", "1073741824"}, 1 << 30},
		{"", []string{"--memory-limit", "0"}, math.MaxInt64},
		{"512MiB", nil, memoryLimit()},
		{"512MiB", []string{"--memory-limit", "1073741824"}, 1 << 30},
	})
}

type serveSettingCase struct {
	env  string
	args []string
	want int64
}

// testServeRuntimeSetting runs serve once per case with env set to the
// case's value and reads the setting (get) while it serves and after it
// returned, when it must be what it was before.
func testServeRuntimeSetting(t *testing.T, env string, get func() int64, cases []serveSettingCase) {
	t.Helper()
	before := get()
	for _, tc := range cases {
		t.Setenv(env, tc.env)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, err := client.New("http://"+addr, client.ProtocolHTTP, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ready, got := false, int64(0)
		code, stderr := serveWhile(t, append([]string{"--http", addr, "--grpc", "", "--log-level", "error"}, tc.args...), func() {
			for deadline := time.Now().Add(10 * time.Second); !ready && time.Now().Before(deadline); {
				if ready, _ = c.ServerReady(context.Background()); !ready {
					time.Sleep(20 * time.Millisecond)
				}
			}
			got = get()
		})
		c.Close()
		if code != 0 || !ready {
			t.Fatalf("%s=%q %v: serve exited %d (ready: %v): %s", env, tc.env, tc.args, code, ready, stderr)
		}
		if got != tc.want {
			t.Errorf("%s=%q %v: %d while serving, want %d", env, tc.env, tc.args, got, tc.want)
		}
		if after := get(); after != before {
			t.Errorf("%s=%q %v: %d after serve returned, want %d as before", env, tc.env, tc.args, after, before)
		}
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

// TestServeHTTPFastPathOff: with --http-fast-path=false REST inference is
// served by net/http alone, and answered.
func TestServeHTTPFastPathOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.New("http://"+addr, client.ProtocolHTTP, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var resp *oip.InferResponse
	var inferErr error
	code, stderr := serveWhile(t, []string{"--http", addr, "--grpc", "", "--log-level", "error", "--http-fast-path=false"}, func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if ready, _ := c.ServerReady(context.Background()); ready {
				break
			}
		}
		in := tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1, 2}, Data: []int32{3, -4}}
		resp, inferErr = c.Infer(context.Background(), &oip.InferRequest{Model: "identity_int32", Inputs: []oip.InferInput{{Tensor: in}}})
	})
	if code != 0 || inferErr != nil {
		t.Fatalf("serve exited %d, infer: %v: %s", code, inferErr, stderr)
	}
	if len(resp.Outputs) != 1 || !reflect.DeepEqual(resp.Outputs[0].Data, []int32{3, -4}) {
		t.Fatalf("outputs %+v, want INPUT0 back", resp.Outputs)
	}
}
