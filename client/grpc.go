package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// GRPC is the gRPC transport. With raw set, Infer sends tensor data in
// raw_input_contents; otherwise in typed contents (FP16/BF16 always raw).
//
// A GRPC client is safe for concurrent use. With Options.Connections > 1 it
// opens that many independent connections and spreads calls over them in
// turn, since one HTTP/2 connection serialises on a single TCP stream.
type GRPC struct {
	addr  string
	raw   bool
	opts  Options
	md    []string // outgoing metadata as key/value pairs, keys lower-cased
	conns []*grpc.ClientConn
	next  atomic.Uint64
	stub  inferencepb.GRPCInferenceServiceClient

	// The lean transport of PreparedGRPCInfer over plaintext, made on first use.
	h2once sync.Once
	h2     *h2cClient
	h2err  error
}

// NewGRPC returns a gRPC client for addr ("host:port").
func NewGRPC(addr string, raw bool, opts Options) (*GRPC, error) {
	if err := checkGRPCAddr(addr); err != nil {
		return nil, err
	}
	opts = opts.withDefaults(true)
	if opts.Host == "" {
		opts.Host = opts.Header.Get("Host") // as for REST
	}
	c := &GRPC{addr: addr, raw: raw, opts: opts}
	for k, vs := range opts.Header {
		k = strings.ToLower(k)
		if k == "host" { // carried as :authority
			continue
		}
		for _, v := range vs {
			c.md = append(c.md, k, v)
		}
	}

	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = alertingTLS{credentials.NewTLS(opts.TLS)}
	}
	recv := opts.MaxMessageBytes
	if recv > math.MaxInt32 { // gRPC frames messages with a 32-bit length
		recv = math.MaxInt32
	}
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithUserAgent(userAgent),
		grpc.WithMaxHeaderListSize(uint32(min(opts.MaxHeaderBytes, math.MaxUint32))),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(int(recv)),
			grpc.MaxCallSendMsgSize(math.MaxInt32),
			grpc.ForceCodecV2(newBoundedCodec(recv)),
		),
	}
	if opts.Host != "" {
		dopts = append(dopts, grpc.WithAuthority(opts.Host))
	}
	for range opts.Connections {
		cc, err := grpc.NewClient(addr, dopts...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("gRPC target %q: %w", addr, err)
		}
		cc.Connect() // dial now rather than on the first call
		c.conns = append(c.conns, cc)
	}
	c.stub = inferencepb.NewGRPCInferenceServiceClient(roundRobin{c})
	return c, nil
}

// checkGRPCAddr accepts "host:port" and rejects URLs with a hint.
func checkGRPCAddr(addr string) error {
	if i := strings.Index(addr, "://"); i >= 0 {
		return fmt.Errorf("gRPC target %q is a URL; pass host:port (e.g. %q)", addr, hostPortOf(addr[i+3:]))
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gRPC target %q: want host:port (e.g. 127.0.0.1:8001): %w", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("gRPC target %q: port %q is not a number from 1 to 65535", addr, port)
	}
	return nil
}

// hostPortOf trims a path from the rest of a URL, for the hint.
func hostPortOf(s string) string {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	return s
}

// roundRobin spreads calls over the client's connections in turn.
type roundRobin struct{ c *GRPC }

func (r roundRobin) conn() *grpc.ClientConn {
	conns := r.c.conns
	if len(conns) == 1 {
		return conns[0]
	}
	return conns[(r.c.next.Add(1)-1)%uint64(len(conns))]
}

func (r roundRobin) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return r.conn().Invoke(ctx, method, args, reply, opts...)
}

func (r roundRobin) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return r.conn().NewStream(ctx, desc, method, opts...)
}

// Stub returns the generated stub on the client's connection(s), for callers
// that must send hand-built messages. Calls through it do not get the
// client's timeout or metadata; use Context for that.
func (c *GRPC) Stub() inferencepb.GRPCInferenceServiceClient { return c.stub }

// Conn returns the client's connection(s) as one grpc.ClientConnInterface
// (calls go round-robin), for stubs of other services on the same server such
// as grpc.health.v1. Like Stub, it adds no timeout or metadata.
func (c *GRPC) Conn() grpc.ClientConnInterface { return roundRobin{c} }

// Addr returns the target address.
func (c *GRPC) Addr() string { return c.addr }

// Raw reports whether Infer sends raw_input_contents.
func (c *GRPC) Raw() bool { return c.raw }

// Context derives a call context carrying the client's timeout and metadata.
// Metadata already on ctx is kept.
func (c *GRPC) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	if len(c.md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, c.md...)
	}
	return ctx, cancel
}

// callError converts an RPC failure. A status becomes GRPCCode and Message;
// for DEADLINE_EXCEEDED, and for CANCELLED when the call's context ended, Err
// also wraps the context error so that errors.Is(err,
// context.DeadlineExceeded) holds as for REST. gRPC
// reports client-side failures as statuses too (connection refused is
// UNAVAILABLE), so a non-OK GRPCCode is not proof that the server answered.
func callError(ctx context.Context, op string, err error) *Error {
	s, ok := status.FromError(err)
	if !ok {
		return &Error{Op: op, Err: transportError(ctx, err)}
	}
	e := &Error{Op: op, GRPCCode: s.Code(), Message: s.Message()}
	if e.GRPCCode == codes.OK { // not a status after all; keep the cause
		e.Err = err
	}
	switch cerr := ctx.Err(); {
	case cerr != nil && (s.Code() == codes.DeadlineExceeded || s.Code() == codes.Canceled):
		e.Err = cerr
	case s.Code() == codes.DeadlineExceeded:
		// The server enforces the deadline sent as grpc-timeout and may
		// report it a moment before the local context expires.
		e.Err = context.DeadlineExceeded
	}
	return e
}

func (c *GRPC) ServerLive(ctx context.Context) (bool, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.ServerLive(ctx, &inferencepb.ServerLiveRequest{})
	if err != nil {
		return false, callError(ctx, "ServerLive", err)
	}
	return r.GetLive(), nil
}

func (c *GRPC) ServerReady(ctx context.Context) (bool, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.ServerReady(ctx, &inferencepb.ServerReadyRequest{})
	if err != nil {
		return false, callError(ctx, "ServerReady", err)
	}
	return r.GetReady(), nil
}

func (c *GRPC) ModelReady(ctx context.Context, model, version string) (bool, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: model, Version: version})
	if err != nil {
		return false, callError(ctx, "ModelReady", err)
	}
	return r.GetReady(), nil
}

func (c *GRPC) ServerMetadata(ctx context.Context) (*oip.ServerMetadata, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.ServerMetadata(ctx, &inferencepb.ServerMetadataRequest{})
	if err != nil {
		return nil, callError(ctx, "ServerMetadata", err)
	}
	return oip.ServerMetadataFromProto(r), nil
}

func (c *GRPC) ModelMetadata(ctx context.Context, model, version string) (*oip.ModelMetadata, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: model, Version: version})
	if err != nil {
		return nil, callError(ctx, "ModelMetadata", err)
	}
	return oip.ModelMetadataFromProto(r), nil
}

func (c *GRPC) Infer(ctx context.Context, req *oip.InferRequest) (*oip.InferResponse, error) {
	const op = "Infer"
	if req == nil {
		return nil, &Error{Op: op, Err: errors.New("nil request")}
	}
	pb, err := oip.ToProtoRequest(req, c.raw)
	if err != nil {
		return nil, &Error{Op: op, Err: fmt.Errorf("encode request: %w", err)}
	}
	pb.ModelName, pb.ModelVersion, pb.Id = req.Model, req.Version, req.ID
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.ModelInfer(ctx, pb)
	if err != nil {
		return nil, callError(ctx, op, err)
	}
	resp, err := oip.FromProtoResponse(r)
	if err != nil {
		return nil, &Error{Op: op, Message: "decode response: " + err.Error(), Err: err}
	}
	resp.Model, resp.Version, resp.ID = r.GetModelName(), r.GetModelVersion(), r.GetId()
	return resp, nil
}

// Close closes every connection; calls in flight fail.
func (c *GRPC) Close() error {
	var errs []error
	c.h2once.Do(func() {}) // no lean transport from now on
	if c.h2 != nil {
		c.h2.close()
	}
	for _, cc := range c.conns {
		if err := cc.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
