package referencetest

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/model"
)

// Start starts a reference server with the fixture models on 127.0.0.1:0 for
// both REST and gRPC, after applying opts to reference.DefaultConfig. It
// returns once both ports accept connections and shuts the server down when
// the test ends. Server warnings and errors (5xx causes, panics) go to the
// test log. An option may set HTTPAddr or GRPCAddr to "" to disable one.
func Start(t testing.TB, opts ...func(*reference.Config)) *reference.Server {
	t.Helper()
	return StartRepo(t, nil, opts...)
}

// StartRepo is Start with the models of repo instead of the fixtures (nil:
// the fixtures), for tests that need a model of their own.
func StartRepo(t testing.TB, repo *model.Repository, opts ...func(*reference.Config)) *reference.Server {
	t.Helper()
	cfg := reference.DefaultConfig()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.GRPCAddr = "127.0.0.1:0"
	logs := &testWriter{t: t}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := reference.New(cfg, repo)
	if err != nil {
		t.Fatalf("referencetest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("referencetest: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("referencetest: shutdown: %v", err)
		}
		logs.close()
	})
	for _, addr := range []string{srv.HTTPAddr(), srv.GRPCAddr()} {
		if addr == "" {
			continue
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatalf("referencetest: %s does not accept connections: %v", addr, err)
		}
		conn.Close()
	}
	return srv
}

// testWriter sends log lines to t.Log until the test's cleanup closes it;
// logging to a finished test would panic.
type testWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log("reference server: " + strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}
