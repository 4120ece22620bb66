package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/oipkit/oipkit/oip"
)

// REST is the REST transport. With binary set it sends inputs and asks for
// outputs through the binary-data extension.
//
// A REST client is safe for concurrent use. It uses HTTP/1.1 keep-alive
// connections only (Options.Connections per host), never a proxy from the
// environment, and never follows redirects: a 3xx is an answer like any other.
type REST struct {
	base   string // scheme://host[:port][/prefix], no trailing slash
	binary bool
	opts   Options
	hc     *http.Client
	tr     *http.Transport
	http1  *http1Client // PreparedInfer over plain http; nil for https

	getHeader  http.Header // Options.Header + User-Agent; read-only
	jsonHeader http.Header // getHeader + Content-Type: application/json; read-only

	// PostInfer caches: parsed infer URLs by model/version and the headers
	// of the last binary header length, so that repeated calls with the same
	// body shape allocate nothing of their own beyond a bytes.Reader.
	inferURLs  sync.Map // inferKey -> *url.URL
	postHeader atomic.Pointer[postHeader]
}

type inferKey struct{ model, version string }

type postHeader struct {
	headerLen int
	h         http.Header
}

// RawResponse is an HTTP exchange's answer as received.
type RawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// NewREST returns a REST client for baseURL (scheme, host and port; no path
// beyond an optional prefix).
func NewREST(baseURL string, binary bool, opts Options) (*REST, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if opts.TLS != nil && strings.HasPrefix(base, "http://") {
		return nil, fmt.Errorf("base URL %q is plain http but TLS options are set; use https://", baseURL)
	}
	opts = opts.withDefaults(false)
	if opts.Host == "" {
		// Go sends Host from req.Host only; honour a Host given as a header.
		opts.Host = opts.Header.Get("Host")
	}
	opts.Header.Del("Host")

	tr := &http.Transport{
		Proxy: nil, // targets are usually loopback; never pick up HTTP_PROXY
		DialContext: (&net.Dialer{
			Timeout:   opts.Timeout,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSClientConfig:     opts.TLS,
		TLSHandshakeTimeout: opts.Timeout,
		MaxIdleConns:        opts.Connections,
		MaxIdleConnsPerHost: opts.Connections,
		MaxConnsPerHost:     opts.Connections,
		IdleConnTimeout:     90 * time.Second,
		// Bodies are compared and measured as sent; no transparent gzip.
		DisableCompression:     true,
		MaxResponseHeaderBytes: opts.MaxHeaderBytes,
	}
	c := &REST{
		base:   base,
		binary: binary,
		opts:   opts,
		tr:     tr,
		hc: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}
	if strings.HasPrefix(base, "http://") {
		u, _ := url.Parse(base) // validated by parseBaseURL
		c.http1 = newHTTP1(hostPort(u), opts)
	}
	c.getHeader = opts.Header.Clone()
	if c.getHeader == nil {
		c.getHeader = http.Header{}
	}
	if c.getHeader.Get("User-Agent") == "" {
		c.getHeader.Set("User-Agent", userAgent)
	}
	c.jsonHeader = c.getHeader.Clone()
	c.jsonHeader.Set("Content-Type", "application/json")
	return c, nil
}

// parseBaseURL validates a base URL and returns it without a trailing slash.
func parseBaseURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("base URL %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("base URL %q: scheme must be http or https (e.g. http://127.0.0.1:8000)", s)
	}
	if u.Host == "" {
		return "", fmt.Errorf("base URL %q has no host", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("base URL %q: only scheme, host, port and a path prefix are allowed", s)
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// BaseURL returns the validated base URL, without a trailing slash.
func (c *REST) BaseURL() string { return c.base }

// Binary reports whether Infer uses the binary-data extension.
func (c *REST) Binary() bool { return c.binary }

// Do sends one HTTP request to path (e.g. "/v2/models/add_sub/infer") with the
// client's headers, timeout and size limit, and returns the answer whatever
// its status. It is for callers that must send malformed requests or inspect
// raw answers; err is non-nil only when no complete answer arrived.
//
// path is appended to the base URL as given (it may carry a query) and is not
// escaped. header is added to the client's headers, replacing values of the
// same keys; a "Host" entry overrides the Host header. A nil body sends no
// body.
func (c *REST) Do(ctx context.Context, method, path string, header http.Header, body []byte) (*RawResponse, error) {
	u, err := url.Parse(c.base + path)
	if err != nil {
		return nil, &Error{Op: "Do", Err: fmt.Errorf("path %q: %w", path, err)}
	}
	h := c.getHeader.Clone()
	host := c.opts.Host
	for k, v := range header {
		if http.CanonicalHeaderKey(k) == "Host" {
			if len(v) > 0 {
				host = v[0]
			}
			continue
		}
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
	return c.send(ctx, "Do", method, u, h, host, body)
}

// PostInfer POSTs a pre-encoded inference body (from oip.EncodeRESTRequest)
// to the infer route of model and version, with Content-Type
// application/json when headerLen < 0 and application/octet-stream plus
// Inference-Header-Content-Length otherwise. It returns the answer whatever
// its status, like Do.
//
// It is the load generator's hot path. body is never copied or modified, so
// one body may be shared by concurrent calls. The parsed URL and the request
// headers are cached (headers for the most recent headerLen), so a call
// allocates only what net/http needs plus one bytes.Reader and its GetBody
// closure (for retries on a stale keep-alive connection): readers are not
// pooled because the transport may still read a request body after the
// response has arrived.
func (c *REST) PostInfer(ctx context.Context, model, version string, body []byte, headerLen int) (*RawResponse, error) {
	u, err := c.inferURL(model, version)
	if err != nil {
		return nil, &Error{Op: "Infer", Err: err}
	}
	return c.send(ctx, "Infer", http.MethodPost, u, c.postHeaders(headerLen), c.opts.Host, body)
}

func (c *REST) inferURL(model, version string) (*url.URL, error) {
	k := inferKey{model, version}
	if u, ok := c.inferURLs.Load(k); ok {
		return u.(*url.URL), nil
	}
	u, err := url.Parse(c.base + modelPath(model, version) + "/infer")
	if err != nil {
		return nil, fmt.Errorf("infer URL for model %q version %q: %w", model, version, err)
	}
	c.inferURLs.Store(k, u)
	return u, nil
}

// postHeaders returns read-only request headers for a body with headerLen.
func (c *REST) postHeaders(headerLen int) http.Header {
	if headerLen < 0 {
		return c.jsonHeader
	}
	if p := c.postHeader.Load(); p != nil && p.headerLen == headerLen {
		return p.h
	}
	h := c.getHeader.Clone()
	h.Set("Content-Type", "application/octet-stream")
	h.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(headerLen))
	c.postHeader.Store(&postHeader{headerLen: headerLen, h: h})
	return h
}

// send performs one exchange. u and header are only read, so they may be
// shared between concurrent calls.
func (c *REST) send(ctx context.Context, op, method string, u *url.URL, header http.Header, host string, body []byte) (*RawResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req := &http.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
		Host:       host,
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Body = http.NoBody
		if len(body) > 0 {
			req.Body = newRequestBody(body)
			// GetBody lets the transport resend a request whose keep-alive
			// connection the server closed before anything was written.
			req.GetBody = func() (io.ReadCloser, error) { return newRequestBody(body), nil }
		}
	}
	resp, err := c.hc.Do(req.WithContext(ctx))
	if err != nil && req.Body != nil && ctx.Err() == nil && staleConn(err) {
		// A keep-alive connection the server closed while this request was
		// being written: net/http resends only idempotent requests, but
		// every OIP POST may be resent (no call has side effects a second
		// attempt would repeat wrongly), so resend once on a new connection.
		retry := *req
		retry.Body, _ = req.GetBody()
		if req.GetBody == nil {
			retry.Body = http.NoBody
		}
		resp, err = c.hc.Do(retry.WithContext(ctx))
	}
	if err != nil {
		return nil, &Error{Op: op, Err: transportError(ctx, headerCapError(err, c.opts.MaxHeaderBytes))}
	}
	defer resp.Body.Close()
	b, err := readBody(resp, c.opts.MaxResponseBytes)
	if err != nil {
		e := &Error{Op: op, Header: resp.Header, Body: b}
		if errors.Is(err, ErrResponseTooLarge) {
			e.Message = bodyCapMessage(c.opts.MaxResponseBytes)
			e.Err = err
		} else {
			e.Err = transportError(ctx, fmt.Errorf("read HTTP %d response body: %w", resp.StatusCode, err))
		}
		return nil, e
	}
	return &RawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// requestBody reads a request body in place: one allocation, no copy.
type requestBody struct{ bytes.Reader }

func newRequestBody(b []byte) *requestBody {
	r := new(requestBody)
	r.Reset(b)
	return r
}

func (*requestBody) Close() error { return nil }

// transportError makes sure an error caused by the call's context expiring
// wraps the context's error, whatever net/http reported.
func transportError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// readBody reads a body of at most max bytes. A larger one is an error
// wrapping ErrResponseTooLarge that returns only its first maxErrorBody
// bytes: the rest is never held, and the caller's Close drops the
// connection rather than reading on.
func readBody(resp *http.Response, max int64) ([]byte, error) {
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		return nil, nil // Content-Length describes a body that is not sent
	}
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%w: HTTP %d Content-Length %d exceeds %d bytes (--max-body-bytes)",
			ErrResponseTooLarge, resp.StatusCode, resp.ContentLength, max)
	}
	if resp.ContentLength >= 0 {
		// net/http reports a body shorter than Content-Length as
		// io.ErrUnexpectedEOF and never returns more than it.
		b := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	// Of unknown length: the buffer doubles up to max+1 bytes (io.ReadAll
	// grows by a quarter, leaving several times max as garbage on the way).
	b := make([]byte, 0, min(512, max+1))
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(int64(cap(b)), max+1-int64(cap(b)))))
		}
		n, err := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > max {
			return bytes.Clone(b[:min(len(b), maxErrorBody)]),
				fmt.Errorf("%w: HTTP %d body exceeds %d bytes (--max-body-bytes)", ErrResponseTooLarge, resp.StatusCode, max)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// modelPath is /v2/models/{model}[/versions/{version}] with both escaped.
func modelPath(model, version string) string {
	p := "/v2/models/" + url.PathEscape(model)
	if version != "" {
		p += "/versions/" + url.PathEscape(version)
	}
	return p
}

// get fetches path and turns a non-2xx answer into an *Error.
func (c *REST) get(ctx context.Context, op, path string) (*RawResponse, error) {
	u, err := url.Parse(c.base + path)
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	raw, err := c.send(ctx, op, http.MethodGet, u, c.getHeader, c.opts.Host, nil)
	if err != nil {
		return nil, err
	}
	if raw.Status < 200 || raw.Status > 299 {
		return raw, statusError(op, raw)
	}
	return raw, nil
}

// post sends a JSON body to path and turns a non-2xx answer into an *Error.
func (c *REST) post(ctx context.Context, op, path string, body any) (*RawResponse, error) {
	u, err := url.Parse(c.base + path)
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	h := c.getHeader.Clone()
	h.Set("Content-Type", "application/json")
	raw, err := c.send(ctx, op, http.MethodPost, u, h, c.opts.Host, b)
	if err != nil {
		return nil, err
	}
	if raw.Status < 200 || raw.Status > 299 {
		return raw, statusError(op, raw)
	}
	return raw, nil
}

// health is a GET whose answer is 200 (true) or anything else (false).
func (c *REST) health(ctx context.Context, op, path string) (bool, error) {
	raw, err := c.get(ctx, op, path)
	if err != nil {
		return false, err
	}
	if raw.Status != http.StatusOK {
		return false, statusError(op, raw)
	}
	return true, nil
}

// maxErrorText bounds the body text quoted in an *Error without an "error"
// field.
const maxErrorText = 512

// statusError describes a non-success answer: the body's {"error": string}
// when there is one, else a truncated copy of the body.
func statusError(op string, raw *RawResponse) *Error {
	e := &Error{Op: op, HTTPStatus: raw.Status, Body: raw.Body, Header: raw.Header}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw.Body, &obj) == nil && obj != nil {
		if v, ok := obj["error"]; ok {
			if json.Unmarshal(v, &e.Message) == nil {
				return e
			}
			e.Message = bodyText(raw.Body) + ` ("error" is not a string)`
			return e
		}
	}
	e.Message = bodyText(raw.Body) + ` (no "error" field)`
	return e
}

// bodyText quotes a body for an error message: at most maxErrorText bytes,
// cut at a UTF-8 boundary.
func bodyText(b []byte) string {
	if len(b) == 0 {
		return "empty body"
	}
	if len(b) <= maxErrorText {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	n := maxErrorText
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return strings.ToValidUTF8(string(b[:n]), "\uFFFD") + fmt.Sprintf("… (%d bytes)", len(b))
}

// jsonAnswer decodes the answer of a get or post (raw, err as they
// returned) into a new T with decodeJSON.
func jsonAnswer[T any](op, what string, raw *RawResponse, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := decodeJSON(op, raw, what, v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeJSON decodes a 2xx metadata answer; a body that is not a JSON object
// of the expected shape is an *Error carrying the status and the body.
func decodeJSON(op string, raw *RawResponse, what string, v any) error {
	b := bytes.TrimLeft(raw.Body, " \t\r\n")
	var err error
	if len(b) == 0 || b[0] != '{' {
		err = errors.New("body is not a JSON object")
	} else {
		err = json.Unmarshal(raw.Body, v)
	}
	if err != nil {
		return &Error{
			Op:         op,
			HTTPStatus: raw.Status,
			Message:    fmt.Sprintf("invalid %s JSON: %v", what, err),
			Body:       raw.Body,
			Header:     raw.Header,
			Err:        fmt.Errorf("decode %s: %w", what, err),
		}
	}
	return nil
}

func (c *REST) ServerLive(ctx context.Context) (bool, error) {
	return c.health(ctx, "ServerLive", "/v2/health/live")
}

func (c *REST) ServerReady(ctx context.Context) (bool, error) {
	return c.health(ctx, "ServerReady", "/v2/health/ready")
}

func (c *REST) ModelReady(ctx context.Context, model, version string) (bool, error) {
	return c.health(ctx, "ModelReady", modelPath(model, version)+"/ready")
}

func (c *REST) ServerMetadata(ctx context.Context) (*oip.ServerMetadata, error) {
	const op = "ServerMetadata"
	raw, err := c.get(ctx, op, "/v2")
	return jsonAnswer[oip.ServerMetadata](op, "server metadata", raw, err)
}

func (c *REST) ModelMetadata(ctx context.Context, model, version string) (*oip.ModelMetadata, error) {
	const op = "ModelMetadata"
	raw, err := c.get(ctx, op, modelPath(model, version))
	return jsonAnswer[oip.ModelMetadata](op, "model metadata", raw, err)
}

func (c *REST) Infer(ctx context.Context, req *oip.InferRequest) (*oip.InferResponse, error) {
	const op = "Infer"
	if req == nil {
		return nil, &Error{Op: op, Err: errors.New("nil request")}
	}
	body, headerLen, err := oip.EncodeRESTRequest(req, oip.RESTEncoding{BinaryInputs: c.binary, BinaryOutputs: c.binary})
	if err != nil {
		return nil, &Error{Op: op, Err: fmt.Errorf("encode request: %w", err)}
	}
	raw, err := c.PostInfer(ctx, req.Model, req.Version, body, headerLen)
	if err != nil {
		return nil, err
	}
	return DecodeInferResponse(raw)
}

// DecodeInferResponse decodes the answer to an inference POST (from Do or
// PostInfer) as Infer does: a non-2xx status, an invalid
// Inference-Header-Content-Length or an undecodable body is an *Error that
// keeps the body.
func DecodeInferResponse(raw *RawResponse) (*oip.InferResponse, error) {
	const op = "Infer"
	if raw.Status < 200 || raw.Status > 299 {
		return nil, statusError(op, raw)
	}
	fail := func(msg string, err error) error {
		return &Error{Op: op, HTTPStatus: raw.Status, Message: msg, Body: raw.Body, Header: raw.Header, Err: err}
	}
	headerLen, err := oip.ParseHeaderLength(raw.Header.Values(oip.HeaderInferenceHeaderContentLength), len(raw.Body))
	if err != nil {
		return nil, fail(err.Error(), err)
	}
	resp, err := oip.DecodeRESTResponse(raw.Body, headerLen)
	if err != nil {
		return nil, fail("decode response: "+err.Error(), err)
	}
	return resp, nil
}

// Close closes idle keep-alive connections; calls in flight finish.
func (c *REST) Close() error {
	c.tr.CloseIdleConnections()
	if c.http1 != nil {
		c.http1.closeIdle()
	}
	return nil
}

// staleConn reports whether err is a connection the server closed before
// any answer, the errors after which both REST paths (net/http's and the
// lean HTTP/1.1 client) send a request once more: a reset, a broken pipe,
// an end of stream, or net.ErrClosed when net/http's reader saw the close
// first and closed the connection under its writer.
func staleConn(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed)
}

// hostPort is the address to dial for u: its host with the scheme's
// default port when none is given.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
