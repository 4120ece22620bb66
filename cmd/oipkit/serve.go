package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/version"
)

func init() {
	register(command{Name: "serve", Summary: "run the reference OIP server (REST + gRPC) with the fixture models", Run: runServe})
}

func runServe(ctx context.Context, args []string) error {
	def := reference.DefaultConfig()
	fs := newFlagSet("serve", "serve [flags]", `
Run the reference Open Inference Protocol server with every fixture model
loaded. An empty --http or --grpc address disables that protocol. SIGINT or
SIGTERM shuts the server down gracefully (in-flight requests finish, 30s
at most).

With --tls-cert and --tls-key both REST and gRPC serve TLS; --tls-client-ca
makes it mutual TLS: every client must present a certificate signed by one
of those CAs.`)
	cfg := def
	fs.StringVar(&cfg.HTTPAddr, "http", def.HTTPAddr, "REST listen `address`, HOST:PORT or http://HOST:PORT (\"\" disables REST)")
	fs.StringVar(&cfg.GRPCAddr, "grpc", def.GRPCAddr, "gRPC listen `address` (\"\" disables gRPC)")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", def.MaxBodyBytes, "largest REST request body in `bytes` (larger: 413)")
	fs.Int64Var(&cfg.MaxTensorElements, "max-elements", def.MaxTensorElements, "largest element `count` of one input tensor")
	fs.IntVar(&cfg.GRPCMaxMessageBytes, "grpc-max-message-bytes", def.GRPCMaxMessageBytes, "largest received gRPC message in `bytes` (larger: RESOURCE_EXHAUSTED)")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", def.ReadTimeout, "REST `timeout` for reading a whole request")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", def.WriteTimeout, "REST `timeout` for writing a response")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", def.IdleTimeout, "`timeout` after which idle REST and gRPC connections are closed")
	fs.DurationVar(&cfg.DefaultDelay, "delay", def.DefaultDelay, "`duration` the delay model sleeps when a request has no delay_ms parameter")
	fs.IntVar(&cfg.MaxStreams, "max-streams", def.MaxStreams, "most gRPC ModelStreamInfer streams open at once (one more: RESOURCE_EXHAUSTED)")
	fs.IntVar(&cfg.MaxStreamInflight, "max-stream-inflight", def.MaxStreamInflight, "most requests of one ModelStreamInfer stream computed at once (beyond: the stream is not read until one finishes)")
	fs.DurationVar(&cfg.StreamIdleTimeout, "stream-idle-timeout", def.StreamIdleTimeout, "`timeout` after which a ModelStreamInfer stream with nothing in flight and nothing received is ended")
	fs.IntVar(&cfg.MaxSequences, "max-sequences", def.MaxSequences, "most live sequences of stateful models (starting one more: RESOURCE_EXHAUSTED / 429)")
	fs.DurationVar(&cfg.SequenceIdleTimeout, "sequence-idle-timeout", def.SequenceIdleTimeout, "`timeout` after which a sequence without a request is forgotten")
	fs.DurationVar(&cfg.TokenInterval, "token-interval", def.TokenInterval, "`duration` between the tokens model's responses when a request has no interval_ms parameter")
	fs.IntVar(&cfg.MaxSharedMemoryRegions, "max-shm-regions", def.MaxSharedMemoryRegions, "most system shared memory regions registered at once (one more: 400 / INVALID_ARGUMENT)")
	fs.Int64Var(&cfg.MaxSharedMemoryBytes, "max-shm-bytes", def.MaxSharedMemoryBytes, "most `bytes` of system shared memory registered at once (beyond: 400 / INVALID_ARGUMENT)")
	tlsCert := fs.String("tls-cert", "", "PEM `file` of the server certificate (chain); serves TLS with --tls-key")
	tlsKey := fs.String("tls-key", "", "PEM `file` of the server certificate's private key")
	tlsClientCA := fs.String("tls-client-ca", "", "PEM `file` of the CAs whose client certificates are accepted; requires one (mutual TLS)")
	instances := fs.String("instances", "", "execution instances of models, `MODEL=N[,MODEL=N…]`: a model runs at most N requests at once and queues the others, as with Triton's instance_group count (default: no limit)")
	logLevel := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	fastPath := fs.Bool("http-fast-path", true, "serve plaintext REST inference through the server's own HTTP/1.1 path, net/http the rest (false: net/http alone, to measure the fast path or rule it out)")
	gcPercent := fs.Int("gc-percent", serveGCPercent, "the server process's garbage-collection target `percent` (Go's GOGC); the default applies unless GOGC is set in the environment")
	memLimit := fs.Int64("memory-limit", serveMemoryLimit, "the server process's soft memory limit in `bytes` (Go's GOMEMLIMIT): the collector runs sooner near it, whatever --gc-percent; 0 for none; the default applies unless GOMEMLIMIT is set in the environment")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if cfg.HTTPAddr != "" {
		addr, err := listenAddress(cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("%w: --http: %v", errUsage, err)
		}
		cfg.HTTPAddr = addr
	}
	if *instances != "" {
		var err error
		if cfg.Instances, err = reference.ParseInstances(*instances); err != nil {
			return fmt.Errorf("%w: --instances: %v", errUsage, err)
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("%w: --log-level: %v", errUsage, err)
	}
	if *gcPercent <= 0 {
		return fmt.Errorf("%w: --gc-percent must be positive, got %d", errUsage, *gcPercent)
	}
	if *memLimit < 0 {
		return fmt.Errorf("%w: --memory-limit must be 0 (none) or positive, got %d", errUsage, *memLimit)
	}
	for name, v := range map[string]int64{"--max-body-bytes": cfg.MaxBodyBytes, "--max-elements": cfg.MaxTensorElements, "--grpc-max-message-bytes": int64(cfg.GRPCMaxMessageBytes),
		"--max-streams": int64(cfg.MaxStreams), "--max-stream-inflight": int64(cfg.MaxStreamInflight), "--stream-idle-timeout": int64(cfg.StreamIdleTimeout),
		"--max-sequences": int64(cfg.MaxSequences), "--sequence-idle-timeout": int64(cfg.SequenceIdleTimeout),
		"--max-shm-regions": int64(cfg.MaxSharedMemoryRegions), "--max-shm-bytes": cfg.MaxSharedMemoryBytes} {
		if v <= 0 {
			return fmt.Errorf("%w: %s must be positive, got %d", errUsage, name, v)
		}
	}
	if *tlsCert != "" || *tlsKey != "" || *tlsClientCA != "" {
		if *tlsCert == "" || *tlsKey == "" {
			return fmt.Errorf("%w: TLS needs both --tls-cert and --tls-key", errUsage)
		}
		var err error
		if cfg.TLS, err = reference.LoadTLS(*tlsCert, *tlsKey, *tlsClientCA); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	if cfg.DefaultDelay == 0 {
		cfg.DefaultDelay = -1 // the Config zero value means "default"; the flag's 0 means none
	}
	if cfg.TokenInterval == 0 {
		cfg.TokenInterval = -1 // as for --delay
	}
	cfg.NetHTTPOnly = !*fastPath
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	srv, err := reference.New(cfg, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err) // an invalid configuration
	}
	gogc := os.Getenv("GOGC") // the runtime's own, unless --gc-percent or the default replaces it
	if flagSet(fs, "gc-percent") || gogc == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(*gcPercent))
		gogc = strconv.Itoa(*gcPercent)
	}
	memlimit := os.Getenv("GOMEMLIMIT") // as for GOGC
	if flagSet(fs, "memory-limit") || memlimit == "" {
		limit := *memLimit
		if limit == 0 {
			limit = math.MaxInt64 // the runtime's "no limit"
		}
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
		memlimit = strconv.FormatInt(*memLimit, 10)
	}
	cfg.Logger.Info("starting oipkit reference server", "version", version.Version,
		"models", strings.Join(srv.Repository().Names(), " "), "gc_percent", gogc, "memory_limit", memlimit)
	return srv.Serve(ctx)
}

// serveGCPercent is the reference server's GOGC. Its live heap is a couple
// of MB, so at Go's default of 100 a collection runs after every 2–3 MB of
// garbage, every 12 ms under add_sub load; at 400 its CPU per gRPC add_sub
// request fell from 39–42 µs to 29–35 µs on a 2-core machine. The heap may
// then grow to five times what is live before a collection: a few MB more at
// rest; under load what is live is the requests in flight, which the request
// limits bound.
const serveGCPercent = 400

// serveMemoryLimit is the reference server's soft memory limit. At GOGC 400
// the heap may grow to five times what is live, and with large tensors what
// is live is large: 16 MiB REST JSON requests at concurrency 4 put the heap
// goal at 2.9 GB, and a benchmark of 16 MiB tensors over every transport took
// the process to 20 GB and the OOM killer. Near the limit the collector runs
// sooner, so garbage no longer multiplies; a server whose live heap needs
// more still gets it. Small tensors never come near it.
const serveMemoryLimit = 2 << 30

// listenAddress reads a REST listen address in the syntax every command
// accepts for --http: HOST:PORT, or a plain-http URL (https is not served
// here: TLS is configured on its own).
func listenAddress(s string) (string, error) {
	if !strings.Contains(s, "://") {
		return s, nil
	}
	u, err := client.HTTPBaseURL(s)
	if err != nil {
		return "", err
	}
	host, ok := strings.CutPrefix(u, "http://")
	if !ok || strings.Contains(host, "/") {
		return "", fmt.Errorf("%q: want HOST:PORT or http://HOST:PORT", s)
	}
	return host, nil
}
