package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Identification tells a target that is an OIP server from one that is not
// (or is not there) before anything else is sent, so that `oipkit conform`
// and `oipkit load` both stop at once with the same one-line reason instead
// of a wall of failed checks or a silent readiness wait. Both wrap one of
// the two errors below.
var (
	// ErrUnreachable: nothing answers at the address (refused, no route,
	// no answer within the deadline).
	ErrUnreachable = errors.New("target unreachable")
	// ErrNotOIP: something answers, but not the Open Inference Protocol
	// over this transport. The message says what was seen and, when it is
	// recognisable, the likely mistake (the gRPC port given as --http, a
	// plain-HTTP port given as https, a TLS port given as http://, …).
	ErrNotOIP = errors.New("not an OIP server")
)

// A third error, ErrTLS (tls.go), says that the server speaks TLS but no
// session could be set up: its certificate is not trusted or not for this
// name, or it wants a client certificate it did not get.

// DefaultIdentifyTimeout bounds an identification when the context has no
// earlier deadline: a server that does not answer its health route within
// it is reported unreachable rather than waited for.
const DefaultIdentifyTimeout = 2 * time.Second

// Identify checks that the REST endpoint speaks OIP. It is an OIP endpoint
// when GET /v2/health/live answers 200, or when GET /v2 or the live route
// answers with a JSON object (even an error: a server that is starting may
// say so in OIP's error form). md is the server metadata when GET /v2
// answered it, else nil.
func (c *REST) Identify(ctx context.Context) (md *oip.ServerMetadata, err error) {
	ctx, cancel := identifyContext(ctx)
	defer cancel()
	if err := dial(ctx, hostPortOfURL(c.base)); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, c.base, err)
	}
	live, lerr := c.Do(ctx, http.MethodGet, "/v2/health/live", nil, nil)
	if lerr != nil {
		return nil, c.notHTTP(ctx, "GET /v2/health/live", lerr)
	}
	meta, merr := c.Do(ctx, http.MethodGet, "/v2", nil, nil)
	switch {
	case merr != nil && live.Status == http.StatusOK:
		return nil, nil // an OIP server whose metadata route fails: the suite's to report
	case merr != nil:
		return nil, c.notHTTP(ctx, "GET /v2", merr)
	}
	if meta.Status == http.StatusOK {
		var m oip.ServerMetadata
		if json.Unmarshal(meta.Body, &m) == nil {
			md = &m
		}
	}
	if live.Status == http.StatusOK || jsonObject(meta) || jsonObject(live) {
		return md, nil
	}
	if plainToTLS(live) || plainToTLS(meta) {
		return nil, fmt.Errorf("%w: %s: the server speaks TLS: use https:// (GET /v2/health/live answered %s)", ErrNotOIP, c.base, describeHTTP(live))
	}
	return nil, fmt.Errorf("%w: %s: GET /v2/health/live answered %s; GET /v2 answered %s%s",
		ErrNotOIP, c.base, describeHTTP(live), describeHTTP(meta), serverHint(live.Header))
}

// What net/http reports, only in its messages, when a port does not answer
// an HTTP/1.1 request with HTTP/1.1:
//   - http2Frames: the answer began with HTTP/2 frames (a gRPC port's SETTINGS);
//   - unsolicitedFrames: an HTTP/2 server spoke first, before the request
//     was written;
//   - closedUnanswered: the connection was closed or reset with no answer
//     (a gRPC server that read the request as a bad preface and hung up).
func http2Frames(msg string) bool {
	return strings.Contains(msg, `malformed HTTP response "\x00\x00`) ||
		strings.Contains(msg, "malformed HTTP status code") && strings.Contains(msg, `\x00`)
}

func unsolicitedFrames(msg string) bool { return strings.Contains(msg, "readLoopPeekFailLocked") }

func closedUnanswered(msg string) bool {
	return strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset")
}

// NoHTTP1Answer reports whether an HTTP/1.1 request failed because the port
// answered with HTTP/2 frames or hung up without an answer, as a gRPC port
// does; callers name the likely mistake for their own flag.
func NoHTTP1Answer(err error) bool {
	msg := err.Error()
	return http2Frames(msg) || unsolicitedFrames(msg) || closedUnanswered(msg)
}

// notHTTP explains a REST call that got no HTTP answer at all. A gRPC port
// answers an HTTP/1.1 request with HTTP/2 frames (or by closing the
// connection); a plain port answers a TLS handshake with plain text.
func (c *REST) notHTTP(ctx context.Context, what string, err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: %s: %s: no answer within %s", ErrUnreachable, c.base, what, deadlineOf(ctx))
	case http2Frames(msg):
		return fmt.Errorf("%w: %s answers with HTTP/2 frames, not HTTP/1.1: it looks like a gRPC port (pass it as --grpc host:port)", ErrNotOIP, c.base)
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return fmt.Errorf("%w: %s: the server does not speak TLS (use http:// instead of https://)", ErrNotOIP, c.base)
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("%w: %s: the server speaks plain HTTP (use http:// instead of https://)", ErrNotOIP, c.base)
	}
	if why, cause, ok := explainTLS(msg, c.opts.TLS); ok {
		return fmt.Errorf("%w: %s: %s (%s)", ErrTLS, c.base, why, cause)
	}
	// A refused client certificate (TLS 1.3) arrives as an alert after the
	// handshake, and net/http may report only the closed connection it
	// left: ask the TLS layer directly.
	if strings.HasPrefix(c.base, "https://") {
		if why, cause, ok := explainTLS(tlsDiagnose(ctx, hostPortOfURL(c.base), c.opts.TLS), c.opts.TLS); ok {
			return fmt.Errorf("%w: %s: %s (%s)", ErrTLS, c.base, why, cause)
		}
	}
	switch {
	// An HTTP/2 server speaks first (SETTINGS); when that arrives before
	// the request is written, net/http reports an unsolicited response.
	case unsolicitedFrames(msg):
		return fmt.Errorf("%w: %s sends HTTP/2 frames unasked: it looks like a gRPC port (pass it as --grpc host:port)", ErrNotOIP, c.base)
	case closedUnanswered(msg) && strings.HasPrefix(c.base, "http://") && speaksTLS(ctx, hostPortOfURL(c.base)):
		return fmt.Errorf("%w: %s: the server speaks TLS: use https:// (or, for a gRPC port, --grpc host:port with the TLS flags)", ErrNotOIP, c.base)
	case closedUnanswered(msg):
		return fmt.Errorf("%w: %s closed the connection without an HTTP answer to %s (a gRPC or TLS port? pass a gRPC port as --grpc host:port): %v", ErrNotOIP, c.base, what, err)
	}
	return fmt.Errorf("%w: %s: %s: %v", ErrNotOIP, c.base, what, err)
}

// Identify checks that the gRPC endpoint serves
// inference.GRPCInferenceService: ServerLive must answer with a gRPC status
// of that service (OK, or an error the service itself sent). md is the
// server metadata when ServerMetadata answered OK, else nil.
func (c *GRPC) Identify(ctx context.Context) (md *oip.ServerMetadata, err error) {
	ctx, cancel := identifyContext(ctx)
	defer cancel()
	if err := dial(ctx, c.addr); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, c.addr, err)
	}
	cctx, ccancel := c.Context(ctx)
	// Not WaitForReady: a connection that fails its handshake (an HTTP/1
	// port) must fail the call with the transport's reason, not wait.
	_, err = c.stub.ServerLive(cctx, &inferencepb.ServerLiveRequest{})
	ccancel()
	if err != nil {
		if ierr := c.notGRPC(ctx, err); ierr != nil {
			return nil, ierr
		}
	}
	cctx, ccancel = c.Context(ctx)
	defer ccancel()
	if m, merr := c.stub.ServerMetadata(cctx, &inferencepb.ServerMetadataRequest{}); merr == nil {
		return &oip.ServerMetadata{Name: m.GetName(), Version: m.GetVersion(), Extensions: m.GetExtensions()}, nil
	}
	return nil, nil
}

// notGRPC turns a failed ServerLive into an identification error, or nil
// when the failure is the OIP service's own answer (a status it sent).
func (c *GRPC) notGRPC(ctx context.Context, err error) error {
	st := status.Convert(err)
	msg := st.Message()
	if strings.Contains(msg, "tls: first record does not look like a TLS handshake") {
		return fmt.Errorf("%w: %s: the server does not speak TLS (drop the TLS options)", ErrNotOIP, c.addr)
	}
	if why, cause, ok := explainTLS(msg, c.opts.TLS); ok && st.Code() != codes.Unimplemented {
		return fmt.Errorf("%w: %s: %s (%s)", ErrTLS, c.addr, why, cause)
	}
	switch st.Code() {
	case codes.Unimplemented:
		// A server of the service that lacks this one RPC is still an OIP
		// server (a broken one, for the conformance suite to report):
		// another core RPC of the service answers.
		cctx, cancel := c.Context(ctx)
		_, merr := c.stub.ServerMetadata(cctx, &inferencepb.ServerMetadataRequest{})
		cancel()
		if merr == nil {
			return nil
		}
		services := c.listServices(ctx)
		hint := ""
		if len(services) > 0 {
			hint = "; it serves " + strings.Join(services, ", ")
		}
		return fmt.Errorf("%w: %s does not serve %s (UNIMPLEMENTED: %s)%s",
			ErrNotOIP, c.addr, inferencepb.GRPCInferenceService_ServiceDesc.ServiceName, msg, hint)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s: ServerLive: no answer within %s", ErrUnreachable, c.addr, deadlineOf(ctx))
	case codes.Unavailable, codes.Unknown, codes.Internal:
		lower := strings.ToLower(msg)
		switch {
		case c.opts.TLS == nil && (strings.Contains(lower, "error reading server preface") || strings.Contains(lower, "eof") ||
			strings.Contains(lower, "connection reset")) && speaksTLS(ctx, c.addr):
			return fmt.Errorf("%w: %s: the server speaks TLS: pass --tls (and --ca with the CA that signed its certificate)", ErrNotOIP, c.addr)
		case strings.Contains(lower, "frame too large"), strings.Contains(lower, "http/1"),
			strings.Contains(lower, "error reading server preface"):
			return fmt.Errorf("%w: %s answers HTTP/1.1, not gRPC (HTTP/2): it looks like a REST port (pass it as --http http://%s)", ErrNotOIP, c.addr, c.addr)
		case strings.Contains(lower, "missing http content-type"), strings.Contains(lower, "unexpected http status code"),
			strings.Contains(lower, "malformed header"), strings.Contains(lower, "content-type"):
			return fmt.Errorf("%w: %s answers HTTP/2 but not gRPC (%s)", ErrNotOIP, c.addr, msg)
		case strings.Contains(lower, "connection refused"), strings.Contains(lower, "no such host"):
			return fmt.Errorf("%w: %s: %s", ErrUnreachable, c.addr, msg)
		}
	}
	return nil // the service answered with a status of its own
}

// listServices asks gRPC server reflection, when the server offers it, which
// services it serves: "TorchServe's OIP service has another name" is a
// better finding than "UNIMPLEMENTED". Best effort, bounded by ctx.
func (c *GRPC) listServices(ctx context.Context) []string {
	cctx, cancel := c.Context(ctx)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(c.conns[0]).ServerReflectionInfo(cctx)
	if err != nil {
		return nil
	}
	req := &reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}
	if stream.Send(req) != nil {
		return nil
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		if n := s.GetName(); n != "" && !strings.HasPrefix(n, "grpc.reflection.") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	const max = 8
	if len(names) > max {
		names = append(names[:max], "…")
	}
	return names
}

// budgetKey carries the identification's time budget, for messages.
type budgetKey struct{}

func identifyContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := DefaultIdentifyTimeout
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		return context.WithValue(ctx, budgetKey{}, budget), cancel
	}
	ctx, cancel := context.WithCancel(ctx)
	return context.WithValue(ctx, budgetKey{}, budget), cancel
}

// dial opens and closes one TCP connection, so that an address where
// nothing listens fails in milliseconds with the operating system's reason.
func dial(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err
		}
		return err
	}
	return c.Close()
}

func deadlineOf(ctx context.Context) string {
	if b, ok := ctx.Value(budgetKey{}).(time.Duration); ok {
		return b.Round(time.Millisecond).String()
	}
	return "the deadline"
}

// plainToTLS reports whether an answer is a TLS server's refusal of a
// plaintext HTTP request, as Go's net/http and nginx word it.
func plainToTLS(r *RawResponse) bool {
	if r.Status != http.StatusBadRequest {
		return false
	}
	b := string(r.Body)
	return strings.Contains(b, "HTTP request to an HTTPS server") || strings.Contains(b, "plain HTTP request was sent to HTTPS port")
}

// hostPortOfURL is the host:port a base URL connects to.
func hostPortOfURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// jsonObject reports whether an answer's body is a JSON object.
func jsonObject(r *RawResponse) bool {
	b := bytes.TrimSpace(r.Body)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}

// describeHTTP is "404 text/html (312 bytes)" for an answer.
func describeHTTP(r *RawResponse) string {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		ct = mt
	}
	if ct == "" {
		ct = "no Content-Type"
	}
	return fmt.Sprintf("%d %s (%d bytes)", r.Status, ct, len(r.Body))
}

func serverHint(h http.Header) string {
	if s := h.Get("Server"); s != "" {
		return " (Server: " + s + ")"
	}
	return ""
}
