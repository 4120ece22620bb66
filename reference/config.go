package reference

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Config configures a Server. Start from DefaultConfig: an empty address
// disables that protocol, and zero limits and timeouts are replaced by the
// defaults below when the server is created.
type Config struct {
	// HTTPAddr is the REST listen address (default 127.0.0.1:8000); "" disables
	// REST. Port 0 picks a free port; Server.HTTPAddr reports it.
	HTTPAddr string
	// GRPCAddr is the gRPC listen address (default 127.0.0.1:8001); ""
	// disables gRPC.
	GRPCAddr string

	// TLS, when set, makes both REST and gRPC serve TLS with this
	// configuration; its ClientAuth and ClientCAs decide mutual TLS.
	// LoadTLS builds one from PEM files. nil serves plaintext.
	TLS *tls.Config

	// NetHTTPOnly serves REST with net/http alone: the HTTP/1.1 fast path
	// of plaintext inference requests (http1.go) is off, so that its gain
	// can be measured against net/http and it can be ruled out when a
	// client and the server disagree.
	NetHTTPOnly bool

	// MaxBodyBytes caps a REST request body (default 64 MiB); larger bodies
	// get 413.
	MaxBodyBytes int64
	// MaxTensorElements caps the element count of any one input tensor
	// (default 1<<24).
	MaxTensorElements int64
	// GRPCMaxMessageBytes caps a received gRPC message (default 64 MiB);
	// larger messages get RESOURCE_EXHAUSTED.
	GRPCMaxMessageBytes int

	// REST timeouts, as in net/http.Server (defaults 10s, 60s, 60s, 120s).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration

	// MaxStreams caps the ModelStreamInfer streams open at once (default
	// 1024); one more is refused with RESOURCE_EXHAUSTED.
	MaxStreams int
	// MaxStreamInflight caps the requests of one stream being computed at
	// once (default 64). Beyond it the server stops reading the stream until
	// one finishes, so a client that sends without reading is held back by
	// flow control instead of growing the server's memory.
	MaxStreamInflight int
	// StreamIdleTimeout ends a ModelStreamInfer stream that has nothing in
	// flight and receives nothing for this long (default 2m), so streams
	// that are never half-closed do not pile up.
	StreamIdleTimeout time.Duration
	// MaxSequences caps the live sequences of stateful models (default
	// 1024); starting one more is refused with RESOURCE_EXHAUSTED / 429.
	MaxSequences int
	// SequenceIdleTimeout forgets a sequence that received no request for
	// this long (default 60s); its next request is refused as not live.
	SequenceIdleTimeout time.Duration
	// TokenInterval is the tokens fixture's gap between responses when a
	// request carries no interval_ms (default 10ms; negative means none).
	// Like DefaultDelay, used only when New builds the fixtures itself.
	TokenInterval time.Duration

	// Instances gives models execution instances, as Triton's
	// instance_group count does: a model with N runs at most N requests at
	// once and queues the others (model name → N ≥ 1; a model not named
	// has no limit). See instances.go.
	Instances map[string]int

	// DefaultDelay is the delay fixture's sleep when a request carries no
	// delay_ms (default 10ms; negative means no sleep). It is used only when
	// New builds the fixture repository itself.
	DefaultDelay time.Duration

	// MaxSharedMemoryRegions caps the system shared memory regions
	// registered at once (default 64), and MaxSharedMemoryBytes their total
	// mapped size (default 1 GiB); a register beyond either is refused with
	// 400 / INVALID_ARGUMENT.
	MaxSharedMemoryRegions int
	MaxSharedMemoryBytes   int64

	// ShutdownTimeout bounds the graceful shutdown done by Serve when its
	// context ends (default 30s).
	ShutdownTimeout time.Duration

	// Logger receives server logs; nil discards them.
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultHTTPAddr            = "127.0.0.1:8000"
	DefaultGRPCAddr            = "127.0.0.1:8001"
	DefaultMaxBodyBytes        = 64 << 20
	DefaultMaxTensorElements   = 1 << 24
	DefaultGRPCMaxMessageBytes = 64 << 20
	DefaultReadHeaderTimeout   = 10 * time.Second
	DefaultReadTimeout         = 60 * time.Second
	DefaultWriteTimeout        = 60 * time.Second
	DefaultIdleTimeout         = 120 * time.Second
	DefaultDelay               = 10 * time.Millisecond
	DefaultShutdownTimeout     = 30 * time.Second
	DefaultMaxStreams          = 1024
	DefaultMaxStreamInflight   = 64
	DefaultStreamIdleTimeout   = 2 * time.Minute
	DefaultTokenInterval       = 10 * time.Millisecond
	DefaultMaxSequences        = 1024
	DefaultSequenceIdleTimeout = time.Minute

	DefaultMaxSharedMemoryRegions = 64
	DefaultMaxSharedMemoryBytes   = 1 << 30
)

// DefaultConfig returns the default configuration: REST on 127.0.0.1:8000 and
// gRPC on 127.0.0.1:8001.
func DefaultConfig() Config {
	return Config{
		HTTPAddr:            DefaultHTTPAddr,
		GRPCAddr:            DefaultGRPCAddr,
		MaxBodyBytes:        DefaultMaxBodyBytes,
		MaxTensorElements:   DefaultMaxTensorElements,
		GRPCMaxMessageBytes: DefaultGRPCMaxMessageBytes,
		ReadHeaderTimeout:   DefaultReadHeaderTimeout,
		ReadTimeout:         DefaultReadTimeout,
		WriteTimeout:        DefaultWriteTimeout,
		IdleTimeout:         DefaultIdleTimeout,
		DefaultDelay:        DefaultDelay,
		ShutdownTimeout:     DefaultShutdownTimeout,
		MaxStreams:          DefaultMaxStreams,
		MaxStreamInflight:   DefaultMaxStreamInflight,
		StreamIdleTimeout:   DefaultStreamIdleTimeout,
		TokenInterval:       DefaultTokenInterval,
		MaxSequences:        DefaultMaxSequences,
		SequenceIdleTimeout: DefaultSequenceIdleTimeout,

		MaxSharedMemoryRegions: DefaultMaxSharedMemoryRegions,
		MaxSharedMemoryBytes:   DefaultMaxSharedMemoryBytes,
	}
}

// withDefaults fills zero fields and rejects negative limits.
func (c Config) withDefaults() (Config, error) {
	if c.HTTPAddr == "" && c.GRPCAddr == "" {
		return c, errors.New("both HTTP and gRPC are disabled")
	}
	if c.MaxBodyBytes < 0 || c.MaxTensorElements < 0 || c.GRPCMaxMessageBytes < 0 {
		return c, fmt.Errorf("negative limit: max body bytes %d, max tensor elements %d, gRPC max message bytes %d",
			c.MaxBodyBytes, c.MaxTensorElements, c.GRPCMaxMessageBytes)
	}
	if c.MaxStreams < 0 || c.MaxStreamInflight < 0 || c.MaxSequences < 0 {
		return c, fmt.Errorf("negative limit: max streams %d, max stream in-flight %d, max sequences %d", c.MaxStreams, c.MaxStreamInflight, c.MaxSequences)
	}
	if c.MaxSharedMemoryRegions < 0 || c.MaxSharedMemoryBytes < 0 {
		return c, fmt.Errorf("negative limit: max shared memory regions %d, max shared memory bytes %d", c.MaxSharedMemoryRegions, c.MaxSharedMemoryBytes)
	}
	if c.ReadHeaderTimeout < 0 || c.StreamIdleTimeout < 0 || c.SequenceIdleTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 || c.ShutdownTimeout < 0 {
		return c, errors.New("negative timeout")
	}
	setDefault(&c.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&c.MaxTensorElements, DefaultMaxTensorElements)
	setDefault(&c.GRPCMaxMessageBytes, DefaultGRPCMaxMessageBytes)
	setDefault(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDefault(&c.ReadTimeout, DefaultReadTimeout)
	setDefault(&c.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.DefaultDelay, DefaultDelay)
	setDefault(&c.ShutdownTimeout, DefaultShutdownTimeout)
	setDefault(&c.MaxStreams, DefaultMaxStreams)
	setDefault(&c.MaxStreamInflight, DefaultMaxStreamInflight)
	setDefault(&c.StreamIdleTimeout, DefaultStreamIdleTimeout)
	setDefault(&c.TokenInterval, DefaultTokenInterval)
	setDefault(&c.MaxSequences, DefaultMaxSequences)
	setDefault(&c.SequenceIdleTimeout, DefaultSequenceIdleTimeout)
	setDefault(&c.MaxSharedMemoryRegions, DefaultMaxSharedMemoryRegions)
	setDefault(&c.MaxSharedMemoryBytes, DefaultMaxSharedMemoryBytes)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
