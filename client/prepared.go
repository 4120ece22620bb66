package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/oipkit/oipkit/oip"
)

// ErrMalformedResponse is wrapped by the *Error of a call whose answer broke
// HTTP/1.1 framing (status line, headers, Content-Length against the bytes
// that came, chunked encoding) or the binary-data extension's
// Inference-Header-Content-Length against the body.
var ErrMalformedResponse = errors.New("malformed response")

// PreparedInfer is one inference POST serialized once and sent many times:
// the load generator's hot path. Over plain http it is the whole HTTP/1.1
// request — request line, headers and body in one buffer — written with one
// call on a keep-alive connection of the client's own pool and answered on
// the same goroutine (no net/http machinery per request). Over https it goes
// through net/http, which handles TLS and HTTP/2. The client never uses a
// proxy either way.
//
// A PreparedInfer is safe for concurrent use.
type PreparedInfer struct {
	c         *REST
	wire      []byte // plain http: the whole request
	body      []byte
	headerLen int
	model     string
	version   string
}

// InferAnswer is a 2xx answer to a PreparedInfer, with its framing checked.
type InferAnswer struct {
	Status int
	// HeaderLen is the answer's Inference-Header-Content-Length, checked
	// against the body (at most its length); -1 when absent.
	HeaderLen int
	// BodyLen is the body's length in bytes.
	BodyLen int64
	// Body is the body when Send was asked to keep it; nil otherwise.
	Body []byte
}

// PrepareInfer serializes the POST of body (from oip.EncodeRESTRequest, with
// headerLen < 0 for pure JSON) to the infer route of model and version, as
// PostInfer sends it. body is not copied for https and must not be modified.
func (c *REST) PrepareInfer(model, version string, body []byte, headerLen int) (*PreparedInfer, error) {
	u, err := c.inferURL(model, version)
	if err != nil {
		return nil, &Error{Op: "Infer", Err: err}
	}
	p := &PreparedInfer{c: c, body: body, headerLen: headerLen, model: model, version: version}
	if c.http1 == nil {
		return p, nil
	}
	header := c.postHeaders(headerLen)
	host := c.opts.Host
	if host == "" {
		host = u.Host
	}
	var b strings.Builder
	b.Grow(256 + len(body))
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), host)
	for k, vs := range header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, &Error{Op: "Infer", Err: fmt.Errorf("invalid header name %q", k)}
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, &Error{Op: "Infer", Err: fmt.Errorf("invalid value for header %s: %q", k, v)}
			}
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	p.wire = []byte(b.String())
	return p, nil
}

// Send sends the request and reads the whole answer. It keeps the body when
// keep > 0, up to keep bytes (a longer body is an error wrapping
// ErrResponseTooLarge); otherwise the body is read and dropped, so memory
// stays flat whatever the server sends. A status outside 2xx is an *Error
// with HTTPStatus and the server's message; a broken framing is an *Error
// wrapping ErrMalformedResponse; a body beyond Options.MaxResponseBytes
// wraps ErrResponseTooLarge; no answer within Options.Timeout wraps
// context.DeadlineExceeded.
func (p *PreparedInfer) Send(ctx context.Context, keep int64) (InferAnswer, error) {
	max := p.c.opts.MaxResponseBytes
	if keep > 0 && keep < max {
		max = keep
	}
	if p.wire != nil {
		return p.c.http1.send(ctx, p.wire, keep > 0, max)
	}
	return p.sendNetHTTP(ctx, keep > 0, max)
}

// sendNetHTTP is Send over net/http (https), with the same checks.
func (p *PreparedInfer) sendNetHTTP(ctx context.Context, keep bool, max int64) (InferAnswer, error) {
	const op = "Infer"
	c := p.c
	u, err := c.inferURL(p.model, p.version)
	if err != nil {
		return InferAnswer{}, &Error{Op: op, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req := &http.Request{
		Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: c.postHeaders(p.headerLen), Host: c.opts.Host, ContentLength: int64(len(p.body)), Body: http.NoBody,
	}
	if len(p.body) > 0 {
		body := p.body
		req.Body = newRequestBody(body)
		req.GetBody = func() (io.ReadCloser, error) { return newRequestBody(body), nil }
	}
	resp, err := c.hc.Do(req.WithContext(ctx))
	if err != nil {
		return InferAnswer{}, &Error{Op: op, Err: transportError(ctx, headerCapError(err, c.opts.MaxHeaderBytes))}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return InferAnswer{}, statusError(op, &RawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b})
	}
	a := InferAnswer{Status: resp.StatusCode}
	if keep {
		a.Body, err = readBody(resp, max)
		a.BodyLen = int64(len(a.Body))
		if errors.Is(err, ErrResponseTooLarge) {
			return InferAnswer{}, &Error{Op: op, Message: bodyCapMessage(max), Err: err}
		}
	} else if resp.ContentLength > max {
		return InferAnswer{}, &Error{Op: op, Message: bodyCapMessage(max),
			Err: fmt.Errorf("%w: Content-Length %d exceeds %d bytes", ErrResponseTooLarge, resp.ContentLength, max)}
	} else {
		a.BodyLen, err = io.Copy(io.Discard, io.LimitReader(resp.Body, max+1))
	}
	switch {
	case err != nil:
		return InferAnswer{}, &Error{Op: op, Err: transportError(ctx, fmt.Errorf("read HTTP %d response body: %w", resp.StatusCode, err))}
	case a.BodyLen > max:
		return InferAnswer{}, &Error{Op: op, Message: bodyCapMessage(max),
			Err: fmt.Errorf("%w: HTTP %d body exceeds %d bytes", ErrResponseTooLarge, resp.StatusCode, max)}
	}
	if a.HeaderLen, err = checkHeaderLength(resp.Header.Values(oip.HeaderInferenceHeaderContentLength), a.BodyLen); err != nil {
		return InferAnswer{}, &Error{Op: op, Err: err}
	}
	return a, nil
}

// maxErrorBody bounds what is read of a non-2xx answer for its message.
const maxErrorBody = 64 << 10

// checkHeaderLength checks Inference-Header-Content-Length values against
// a body of n bytes.
func checkHeaderLength(values []string, n int64) (int, error) {
	if len(values) == 1 {
		// The common case without allocating: a plain decimal.
		if v, err := strconv.Atoi(values[0]); err == nil && v >= 0 && int64(v) <= n {
			return v, nil
		}
	}
	if n > int64(^uint(0)>>1) {
		n = int64(^uint(0) >> 1)
	}
	hl, err := oip.ParseHeaderLength(values, int(n))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformedResponse, err)
	}
	return hl, nil
}
