package reference

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/internal/rawtcp"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/version"
)

// ServerName is the name the server reports in its metadata.
const ServerName = "oipkit-reference"

// Server is the reference OIP server: REST and gRPC front ends over one
// model repository.
type Server struct {
	cfg     Config
	repo    *model.Repository
	log     *slog.Logger
	metrics *metrics
	stats   *statistics
	catalog *modelCatalog
	// instances limit the executions of models that have a limit.
	instances *instanceGroups

	serverMeta     oip.ServerMetadata
	serverMetaJSON []byte

	httpSrv *http.Server // nil when REST is disabled
	// http1 serves the REST listener's fast path (http1.go) and hands
	// net/http the rest; nil with TLS or netHTTPOnly.
	http1 *http1Server
	// netHTTPOnly turns the fast path off: Config.NetHTTPOnly, or tests
	// that compare the two paths before Start.
	netHTTPOnly bool
	// restViews is EnvRESTViews as New found it (rest_views.go).
	restViews bool
	grpcSrv   *grpc.Server // nil when gRPC is disabled
	health    *health.Server

	mu       sync.Mutex
	started  bool
	stopped  bool
	httpLn   net.Listener
	grpcLn   net.Listener
	serveErr chan error // failures of the serving goroutines

	streams   streamLimits // ModelStreamInfer bookkeeping (ext_stream.go)
	sequences *sequences   // live sequences of stateful models (ext_sequence.go)
	shm       *shmRegions  // registered system shared memory (ext_system_shared_memory.go)

	logSettings *logSettings   // the logging extension's settings, which gate log (ext_logging.go)
	trace       *traceSettings // the trace extension's settings (ext_trace.go)

	shutdownOnce sync.Once
	shutdownErr  error
}

// New returns a server for repo, or for the fixture models when repo is nil.
// It does not listen until Start or Serve.
func New(cfg Config, repo *model.Repository) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("reference server config: %w", err)
	}
	fixtures := repo == nil
	if fixtures {
		repo = model.Fixtures(fixture.Config{DefaultDelay: cfg.DefaultDelay, TokenInterval: cfg.TokenInterval})
	}
	catalog, err := newModelCatalog(repo, fixtures)
	if err != nil {
		return nil, fmt.Errorf("reference server repository: %w", err)
	}
	if err := checkInstances(cfg.Instances, repo.Names()); err != nil {
		return nil, fmt.Errorf("reference server config: %w", err)
	}
	catalog.instances = newInstanceGroups(cfg.Instances)
	logs := newLogSettings()
	s := &Server{
		cfg:         cfg,
		netHTTPOnly: cfg.NetHTTPOnly,
		restViews:   restViews,
		repo:        repo,
		log:         slog.New(logGate{Handler: cfg.Logger.Handler(), settings: logs}),
		logSettings: logs,
		trace:       newTraceSettings(),
		metrics:     newMetrics(),
		stats:       newStatistics(),
		streams:     newStreamLimits(cfg.MaxStreams),
		sequences:   newSequences(cfg.MaxSequences, cfg.SequenceIdleTimeout),
		shm:         newSHMRegions(cfg.MaxSharedMemoryRegions, cfg.MaxSharedMemoryBytes),
		catalog:     catalog,
		instances:   catalog.instances,
		health:      health.NewServer(),
		serveErr:    make(chan error, 3), // fast-path accept, net/http, gRPC
		serverMeta: oip.ServerMetadata{
			Name:       ServerName,
			Version:    version.Version,
			Extensions: Advertised,
		},
	}
	s.metrics.stats = s.stats // /metrics writes Triton's families from the statistics
	if s.serverMetaJSON, err = json.Marshal(s.serverMeta); err != nil {
		return nil, fmt.Errorf("encode server metadata: %w", err)
	}
	if cfg.HTTPAddr != "" {
		s.httpSrv = &http.Server{
			Addr:              cfg.HTTPAddr,
			Handler:           http.HandlerFunc(s.serveHTTP),
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			ReadTimeout:       cfg.ReadTimeout,
			WriteTimeout:      cfg.WriteTimeout,
			IdleTimeout:       cfg.IdleTimeout,
			MaxHeaderBytes:    1 << 20,
			ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		}
		if cfg.TLS != nil {
			s.httpSrv.TLSConfig = cfg.TLS.Clone()
		}
	}
	if cfg.GRPCAddr != "" {
		var creds []grpc.ServerOption
		if cfg.TLS != nil {
			creds = append(creds, grpc.Creds(credentials.NewTLS(cfg.TLS.Clone())))
		}
		s.grpcSrv = grpc.NewServer(append(creds,
			grpc.MaxRecvMsgSize(cfg.GRPCMaxMessageBytes),
			// A connection that does not finish its TLS handshake and HTTP/2
			// preface in time is dropped, as REST drops a slow header.
			grpc.ConnectionTimeout(cfg.ReadHeaderTimeout),
			// Clients may ping, but not more often than every 5s; idle
			// connections are closed after IdleTimeout like REST ones.
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
				MinTime:             5 * time.Second,
				PermitWithoutStream: true,
			}),
			grpc.KeepaliveParams(keepalive.ServerParameters{
				MaxConnectionIdle: cfg.IdleTimeout,
				Time:              2 * time.Minute,
				Timeout:           20 * time.Second,
			}),
			// Calls run on a pool of goroutines whose stacks have already
			// grown, instead of a new goroutine per call that grows its
			// stack again (runtime.morestack was an eighth of the server's
			// CPU under load). A call finding every worker busy still gets
			// a goroutine of its own, so the pool bounds nothing.
			grpc.NumStreamWorkers(grpcStreamWorkers),
			grpc.UnaryInterceptor(s.unaryInterceptor),
			grpc.ChainStreamInterceptor(s.recoverStreamInterceptor),
		)...)
		inferencepb.RegisterGRPCInferenceServiceServer(s.grpcSrv, &grpcService{s: s})
		healthpb.RegisterHealthServer(s.grpcSrv, s.health)
		s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		s.health.SetServingStatus(inferencepb.GRPCInferenceService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	}
	return s, nil
}

// grpcStreamWorkers is the number of goroutines kept to run gRPC calls: a
// call waits for its request message on its worker, so it takes one worker
// per call in flight to run them all on warm stacks; 64 covers the load
// generator's usual concurrency at a few KiB of stack each.
const grpcStreamWorkers = 64

// Repository returns the server's model repository.
func (s *Server) Repository() *model.Repository { return s.repo }

// Start binds the configured addresses and serves in the background. It
// returns once both listeners are bound, so HTTPAddr and GRPCAddr are valid
// when it returns. ctx bounds only the binding.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("reference server already started")
	}
	if s.stopped {
		return errors.New("reference server already shut down")
	}
	var lc net.ListenConfig
	if s.httpSrv != nil {
		ln, err := lc.Listen(ctx, "tcp", s.cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("listen HTTP on %s: %w", s.cfg.HTTPAddr, err)
		}
		s.httpLn = ln
	}
	if s.grpcSrv != nil {
		ln, err := lc.Listen(ctx, "tcp", s.cfg.GRPCAddr)
		if err != nil {
			if s.httpLn != nil {
				s.httpLn.Close()
				s.httpLn = nil
			}
			return fmt.Errorf("listen gRPC on %s: %w", s.cfg.GRPCAddr, err)
		}
		s.grpcLn = ln
	}
	s.started = true
	if s.httpLn != nil {
		if s.httpSrv.TLSConfig == nil && !s.netHTTPOnly {
			s.http1 = newHTTP1Server(s, rawtcp.Listener(s.httpLn))
			s.http1.start(s.serveErr)
		}
		go func() {
			var err error
			switch {
			case s.httpSrv.TLSConfig != nil:
				err = s.httpSrv.ServeTLS(rawtcp.Listener(s.httpLn), "", "") // the certificates are in TLSConfig
			case s.http1 != nil:
				err = s.httpSrv.Serve(s.http1.handoff)
			default:
				err = s.httpSrv.Serve(rawtcp.Listener(s.httpLn))
			}
			if !errors.Is(err, http.ErrServerClosed) {
				s.serveErr <- fmt.Errorf("serve HTTP: %w", err)
			}
		}()
		s.log.Info("REST listening", "addr", s.httpLn.Addr().String(), "tls", s.tlsMode(), "fast_path", s.http1 != nil)
	}
	if s.grpcLn != nil {
		go func() {
			if err := s.grpcSrv.Serve(rawtcp.Listener(s.grpcLn)); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				s.serveErr <- fmt.Errorf("serve gRPC: %w", err)
			}
		}()
		s.log.Info("gRPC listening", "addr", s.grpcLn.Addr().String(), "tls", s.tlsMode())
	}
	return nil
}

// Serve starts the server and blocks until ctx ends or a listener fails,
// then shuts down gracefully within Config.ShutdownTimeout. It returns nil
// after a clean shutdown caused by ctx.
func (s *Server) Serve(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-s.serveErr:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	return errors.Join(serveErr, s.Shutdown(sctx))
}

// HTTPAddr is the bound REST address ("127.0.0.1:43121"), or "" when REST is
// disabled or the server has not started.
func (s *Server) HTTPAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// HTTPURL is the base URL of the REST endpoint ("http://127.0.0.1:43121",
// https:// with TLS), or "" when REST is disabled or the server has not
// started.
func (s *Server) HTTPURL() string {
	a := s.HTTPAddr()
	switch {
	case a == "":
		return ""
	case s.cfg.TLS != nil:
		return "https://" + a
	}
	return "http://" + a
}

// tlsMode names the transport security for logs: off, tls or mutual.
func (s *Server) tlsMode() string {
	switch {
	case s.cfg.TLS == nil:
		return "off"
	case s.cfg.TLS.ClientAuth >= tls.VerifyClientCertIfGiven:
		return "mutual"
	}
	return "tls"
}

// GRPCAddr is the bound gRPC address, or "" when gRPC is disabled or the
// server has not started.
func (s *Server) GRPCAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grpcLn == nil {
		return ""
	}
	return s.grpcLn.Addr().String()
}

// Shutdown stops accepting requests and waits for in-flight ones to finish.
// When ctx ends first, remaining connections are closed forcibly and the
// context's error is returned. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	// The two counts let an operator (and TestServeSIGTERMUnderLoad) check
	// that every request taken before the shutdown was answered.
	s.log.Info("reference server shutting down", "inflight", s.metrics.inflight.Load())
	s.health.Shutdown()  // health checks now report NOT_SERVING
	s.streams.closeAll() // open streams end once their requests are answered
	var wg sync.WaitGroup
	var httpErr, fastErr, grpcErr error
	if s.httpSrv != nil {
		wg.Go(func() {
			if httpErr = s.httpSrv.Shutdown(ctx); httpErr != nil {
				s.httpSrv.Close()
				httpErr = fmt.Errorf("HTTP graceful shutdown: %w", httpErr)
			}
		})
		if s.http1 != nil {
			wg.Go(func() {
				if err := s.http1.shutdown(ctx); err != nil {
					fastErr = fmt.Errorf("HTTP graceful shutdown (fast path): %w", err)
				}
			})
		}
	}
	if s.grpcSrv != nil {
		wg.Go(func() {
			done := make(chan struct{})
			go func() {
				s.grpcSrv.GracefulStop()
				close(done)
			}()
			select {
			case <-done:
			case <-ctx.Done():
				s.grpcSrv.Stop()
				<-done
				grpcErr = fmt.Errorf("gRPC graceful stop: %w", ctx.Err())
			}
		})
	}
	wg.Wait()
	s.shm.closeAll() // unmapped once no request uses them
	s.log.Info("reference server stopped", "answered", s.metrics.requests())
	if httpErr != nil {
		fastErr = nil // one error for REST: the same context ended both
	}
	return errors.Join(httpErr, fastErr, grpcErr)
}
