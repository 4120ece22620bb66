package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/version"
)

// Client speaks the Open Inference Protocol to one server.
type Client interface {
	// ServerLive reports GET /v2/health/live or ServerLive.
	ServerLive(ctx context.Context) (bool, error)
	// ServerReady reports GET /v2/health/ready or ServerReady.
	ServerReady(ctx context.Context) (bool, error)
	// ModelReady reports whether a model (version "" = server's choice) is ready.
	ModelReady(ctx context.Context, model, version string) (bool, error)
	ServerMetadata(ctx context.Context) (*oip.ServerMetadata, error)
	ModelMetadata(ctx context.Context, model, version string) (*oip.ModelMetadata, error)
	Infer(ctx context.Context, req *oip.InferRequest) (*oip.InferResponse, error)
	Close() error
}

// Protocol names a transport and encoding. The names are the ones the load
// generator's --protocol flag accepts.
type Protocol string

// The protocols.
const (
	ProtocolHTTP       Protocol = "http"        // REST with JSON tensor data
	ProtocolHTTPBinary Protocol = "http-binary" // REST with the binary-data extension
	ProtocolGRPC       Protocol = "grpc"        // gRPC with typed contents
	ProtocolGRPCRaw    Protocol = "grpc-raw"    // gRPC with raw_input_contents
)

// Protocols lists every protocol.
var Protocols = []Protocol{ProtocolHTTP, ProtocolHTTPBinary, ProtocolGRPC, ProtocolGRPCRaw}

// ParseProtocol returns the protocol named s.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range Protocols {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown protocol %q (want http, http-binary, grpc or grpc-raw)", s)
}

// IsGRPC reports whether p is a gRPC protocol.
func (p Protocol) IsGRPC() bool { return p == ProtocolGRPC || p == ProtocolGRPCRaw }

// Options configure a client. Zero values mean the defaults.
type Options struct {
	// Timeout bounds each call (default 10s). A deadline already on the
	// context is kept when it is earlier.
	Timeout time.Duration
	// Header is sent with every REST request, and as gRPC metadata (keys
	// lower-cased) with every RPC: auth tokens and the like.
	Header http.Header
	// Host overrides the HTTP Host header or the gRPC :authority.
	Host string
	// TLS enables TLS with this configuration; nil means plaintext.
	TLS *tls.Config
	// MaxResponseBytes caps a REST response body, and a gRPC message unless
	// MaxMessageBytes is set (default 64 MiB: a 16 MiB tensor's binary or
	// gRPC answer with room to spare). A larger one is an error wrapping
	// ErrResponseTooLarge; its excess is never held in memory.
	MaxResponseBytes int64
	// MaxMessageBytes caps a gRPC response message, counting what decoding
	// it costs (default MaxResponseBytes): a message of many small bytes or
	// string entries decodes to many times its size (limits.go).
	MaxMessageBytes int64
	// MaxHeaderBytes caps a response's header block: the HTTP/1.1 status
	// line and headers, an HTTP/2 header list (default 1 MiB).
	MaxHeaderBytes int64
	// Connections is the number of gRPC connections (round-robin) or the
	// HTTP keep-alive pool size per host (default 1 for gRPC, 64 for HTTP).
	Connections int
}

// Error is a failed call. Exactly one of HTTPStatus (REST) and GRPCCode (gRPC)
// describes the server's answer; both are zero for a transport failure (no
// answer at all), in which case Err holds the cause.
type Error struct {
	Op         string     // the call, e.g. "ModelMetadata"
	HTTPStatus int        // REST status, 0 for gRPC or no answer
	GRPCCode   codes.Code // gRPC code, codes.OK for REST or no answer
	Message    string     // the server's error text ({"error": ...} or status message)
	Body       []byte     // the raw REST response body (up to the size limit)
	Header     http.Header
	Err        error // the underlying cause, if any
}

func (e *Error) Error() string {
	switch {
	case e.HTTPStatus != 0:
		return fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.HTTPStatus, e.Message)
	case e.GRPCCode != codes.OK:
		return fmt.Sprintf("%s: gRPC %s: %s", e.Op, e.GRPCCode, e.Message)
	case e.Err != nil:
		return fmt.Sprintf("%s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Op, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus makes status.FromError and status.Code see a gRPC failure's
// code and message; it is nil for REST and transport failures.
func (e *Error) GRPCStatus() *status.Status {
	if e.GRPCCode == codes.OK {
		return nil
	}
	return status.New(e.GRPCCode, e.Message)
}

// New returns a client for protocol p: target is a base URL
// ("http://127.0.0.1:8000") for REST and "host:port" for gRPC.
func New(target string, p Protocol, opts Options) (Client, error) {
	switch p {
	case ProtocolHTTP, ProtocolHTTPBinary:
		return NewREST(target, p == ProtocolHTTPBinary, opts)
	case ProtocolGRPC, ProtocolGRPCRaw:
		return NewGRPC(target, p == ProtocolGRPCRaw, opts)
	}
	return nil, fmt.Errorf("unknown protocol %q", p)
}

// ErrResponseTooLarge is wrapped by the *Error of a call whose response
// body or message exceeds its cap (Options.MaxResponseBytes,
// MaxMessageBytes).
var ErrResponseTooLarge = errors.New("response too large")

// ErrNotProcessed is wrapped by the *Error of a gRPC call the server said it
// did not process: one above the last stream of its GOAWAY, or one it reset
// with REFUSED_STREAM (the lean transport's calls; grpc-go retries those
// itself). Sending it again, here or elsewhere, is safe.
var ErrNotProcessed = errors.New("not processed by the server")

// Defaults for zero Options fields.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 64 << 20
	DefaultMaxHeaderBytes   = 1 << 20
	DefaultHTTPConnections  = 64
	DefaultGRPCConnections  = 1
)

// withDefaults fills zero fields; grpc selects the connection default.
func (o Options) withDefaults(grpc bool) Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = o.MaxResponseBytes
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.Connections <= 0 {
		o.Connections = DefaultHTTPConnections
		if grpc {
			o.Connections = DefaultGRPCConnections
		}
	}
	o.Header = o.Header.Clone()
	if o.TLS != nil {
		o.TLS = o.TLS.Clone()
	}
	return o
}

// userAgent identifies the client unless Options.Header sets User-Agent.
var userAgent = "oipkit/" + version.Version

// ParseHeaders parses "Key: Value" lines (the --header flags of oipkit conform
// and load) into a header for Options.Header; blank lines are skipped.
func ParseHeaders(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("header %q: want \"Key: Value\"", l)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}
