package reference

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oipkit/oipkit/oip"
)

// REST front end. Routing is done by hand rather than with http.ServeMux so
// that model names are taken verbatim from one path segment (dots and escaped
// slashes included) and so that 404 and 405 answers carry the protocol's JSON
// error body.

type routeKind int

const (
	routeServerMetadata routeKind = iota + 1
	routeServerLive
	routeServerReady
	routeModelMetadata
	routeModelReady
	routeModelInfer
	routeMetrics
)

// route is a matched REST route; model and version are unescaped.
type route struct {
	kind           routeKind
	model, version string
}

// allow is the Allow header value of the route.
func (r route) allow() string {
	if r.post() {
		return "POST"
	}
	return "GET, HEAD"
}

// post reports whether the route takes POST (and only POST).
func (r route) post() bool {
	return r.kind == routeModelInfer
}

func (r route) allows(method string) bool {
	if r.post() {
		return method == http.MethodPost
	}
	return method == http.MethodGet || method == http.MethodHead
}

// maxRouteSegments is more path segments than any route has
// (/v2/models/{m}/versions/{v}/infer has six).
const maxRouteSegments = 8

// splitPath splits an escaped URL path into unescaped segments in buf. It
// allocates nothing unless a segment is escaped; ok is false for a path that
// does not start with "/", has more than maxRouteSegments segments or an
// invalid escape.
func splitPath(escapedPath string, buf *[maxRouteSegments]string) (n int, ok bool) {
	if !strings.HasPrefix(escapedPath, "/") {
		return 0, false
	}
	for rest := escapedPath[1:]; ; {
		seg, after, more := strings.Cut(rest, "/")
		if n == len(buf) {
			return 0, false
		}
		if strings.IndexByte(seg, '%') >= 0 {
			u, err := url.PathUnescape(seg)
			if err != nil {
				return 0, false
			}
			seg = u
		}
		buf[n] = seg
		n++
		if !more {
			return n, true
		}
		rest = after
	}
}

// matchRoute maps an escaped URL path to a core route (extension routes are
// in the registry, extensions.go). It splits the path into a fixed array, so
// routing allocates nothing unless a segment is escaped.
func matchRoute(escapedPath string) (route, bool) {
	var buf [maxRouteSegments]string
	n, ok := splitPath(escapedPath, &buf)
	if !ok {
		return route{}, false
	}
	segs := buf[:n]
	switch {
	case len(segs) == 1 && segs[0] == "metrics":
		return route{kind: routeMetrics}, true
	case len(segs) == 0 || segs[0] != "v2":
		return route{}, false
	case len(segs) == 1, len(segs) == 2 && segs[1] == "": // /v2 and OIP-YAML's /v2/
		return route{kind: routeServerMetadata}, true
	case len(segs) == 3 && segs[1] == "health" && segs[2] == "live":
		return route{kind: routeServerLive}, true
	case len(segs) == 3 && segs[1] == "health" && segs[2] == "ready":
		return route{kind: routeServerReady}, true
	case len(segs) < 3 || segs[1] != "models" || segs[2] == "":
		return route{}, false
	}
	r := route{model: segs[2]}
	rest := segs[3:]
	if len(rest) >= 2 && rest[0] == "versions" {
		if rest[1] == "" {
			return route{}, false
		}
		r.version = rest[1]
		rest = rest[2:]
	}
	switch {
	case len(rest) == 0:
		r.kind = routeModelMetadata
	case len(rest) == 1 && rest[0] == "ready":
		r.kind = routeModelReady
	case len(rest) == 1 && rest[0] == "infer":
		r.kind = routeModelInfer
	default:
		return route{}, false
	}
	return r, true
}

// statusWriter remembers the status code for metrics and for panic recovery.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusWriters recycles the statusWriter of each request: like net/http's
// ResponseWriter it wraps, it is not used once the handler has returned.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

func (s *Server) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	w := statusWriters.Get().(*statusWriter)
	*w = statusWriter{ResponseWriter: rw}
	defer func() {
		*w = statusWriter{} // keep nothing of the request
		statusWriters.Put(w)
	}()
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p == http.ErrAbortHandler {
			panic(p)
		}
		s.log.Error("REST handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
		if w.status == 0 {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("internal error: handler panicked: %v", p))
		}
	}()

	rt, ok := matchRoute(r.URL.EscapedPath())
	if (!ok || rt.kind == routeModelMetadata) && s.serveExtension(w, r) {
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route for %s %q", r.Method, r.URL.Path))
		return
	}
	if !rt.allows(r.Method) {
		w.Header().Set("Allow", rt.allow())
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %q; allowed: %s", r.Method, r.URL.Path, rt.allow()))
		return
	}
	switch rt.kind {
	case routeServerMetadata:
		writeJSONBytes(w, http.StatusOK, s.serverMetaJSON)
	case routeServerLive:
		writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	case routeServerReady:
		// Ready unless a model failed to load (model_repository).
		if !s.catalog.ready() {
			writeJSON(w, http.StatusBadRequest, map[string]bool{"ready": false})
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"ready": true})
	case routeModelReady:
		if _, _, err := s.lookup(rt.model, rt.version); err != nil {
			writeError(w, httpStatus(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, struct {
			Name  string `json:"name"`
			Ready bool   `json:"ready"`
		}{rt.model, true})
	case routeModelMetadata:
		md, err := s.repo.Metadata(rt.model, rt.version)
		if nr, ok := s.catalog.metadata(rt.model); err != nil && ok {
			md, err = nr, nil // known, though not ready
		}
		if err != nil {
			writeError(w, httpStatus(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, md)
	case routeModelInfer:
		s.serveInfer(w, r, rt)
	case routeMetrics:
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		s.metrics.write(w)
	}
}

// serveInfer handles POST /v2/models/{m}[/versions/{v}]/infer.
func (s *Server) serveInfer(w *statusWriter, r *http.Request, rt route) {
	start := time.Now()
	s.metrics.inflight.Add(1)
	label := "" // the metrics label: the model's name once it is known to exist
	defer func() {
		s.metrics.inflight.Add(-1)
		status := w.status
		if status == 0 {
			status = http.StatusInternalServerError // a panic before any answer
		}
		s.metrics.observe(label, "rest", statusCode(status), time.Since(start))
	}()

	fail := func(err error) {
		status := httpStatus(err)
		if status >= 500 {
			s.log.Error("REST inference failed", "model", rt.model, "version", rt.version, "status", status, "err", err)
		} else {
			s.log.Debug("REST inference rejected", "model", rt.model, "version", rt.version, "status", status, "err", err)
		}
		writeError(w, status, err.Error())
	}

	m, version, err := s.lookup(rt.model, rt.version)
	if err != nil {
		if _, _, err := s.repo.Lookup(rt.model, ""); err == nil {
			label = rt.model // a known model, an unknown version
		}
		fail(err)
		return
	}
	label = rt.model
	// A request that fails before inference (unreadable or undecodable) is
	// a failure of the version in its statistics; infer records the rest.
	failEarly := func(err error) {
		s.stats.of(rt.model, version).failed(time.Since(start))
		fail(err)
	}
	pad := 0
	if s.restViews {
		pad = bodyPad(r.Header) // rest_views.go
	}
	buf := getBufferFor(r.ContentLength + 1 + int64(pad))
	defer putBuffer(buf)
	body, err := s.readBody(w, r, append((*buf)[:0], make([]byte, pad)...))
	*buf = body[:0]
	if err != nil {
		failEarly(err)
		return
	}
	body = body[pad:]
	// A length of 0 (Triton's "raw binary request") is refused by the
	// decoder: this server does not implement it.
	headerLen, err := oip.ParseHeaderLength(r.Header[oip.HeaderInferenceHeaderContentLength], len(body))
	if err != nil {
		failEarly(err)
		return
	}
	// Nothing decoded from body outlives this handler: JSON data is
	// converted; binary inputs may alias body (BYTES elements always, numeric
	// ones viewed), and so may the outputs of a model that answers with its
	// inputs; the buffer goes back to its pool once the answer is written.
	lim := oip.Limits{MaxElements: s.cfg.MaxTensorElements}
	var req *oip.InferRequest
	if s.restViews {
		req, err = oip.ViewRESTRequest(body, headerLen, lim)
	} else {
		req, err = oip.DecodeRESTRequest(body, headerLen, lim)
	}
	if err != nil {
		failEarly(fmt.Errorf("decode request: %w", err))
		return
	}
	req.Model, req.Version = rt.model, version
	resp, err := s.infer(r.Context(), m, version, req)
	if err != nil {
		fail(err)
		return
	}
	if pw, ok := w.ResponseWriter.(partsWriter); ok && s.restViews {
		hint := len(body) // a JSON answer is often the size of its request
		if headerLen >= 0 {
			hint = headerLen // a binary one's header, of its request's header
		}
		writeParts(w, pw, hint, resp, req, fail)
		return
	}
	outBuf := getBufferFor(int64(len(body))) // an answer is often the size of its request
	defer putBuffer(outBuf)
	out, outHeaderLen, err := oip.AppendRESTResponse((*outBuf)[:0], resp, req.BinaryOutput)
	*outBuf = out[:0]
	if err != nil {
		fail(fmt.Errorf("encode response: %w", err))
		return
	}
	h := w.Header()
	if outHeaderLen >= 0 {
		h["Content-Type"] = contentTypeBinary
		h[oip.HeaderInferenceHeaderContentLength] = []string{strconv.Itoa(outHeaderLen)}
	} else {
		h["Content-Type"] = contentTypeJSON
	}
	if len(out) > autoContentLength {
		h["Content-Length"] = []string{strconv.Itoa(len(out))}
	}
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// autoContentLength is the largest body for which net/http (HTTP/1.1 and
// HTTP/2 alike) sends the Content-Length itself: a handler that writes a
// body this small and returns without flushing gets one, computed without
// allocating, so serveInfer declares it only for larger bodies (which would
// otherwise be chunked). TestInferContentLength checks both sides.
const autoContentLength = 2048

// Header values shared by every response; net/http only reads them.
var (
	contentTypeJSON   = []string{"application/json"}
	contentTypeBinary = []string{"application/octet-stream"}
)

// statusCode is the metrics label of an HTTP status.
func statusCode(status int) string {
	if status == http.StatusOK {
		return "200"
	}
	return strconv.Itoa(status)
}

// Request and response bodies are read and encoded into pooled buffers;
// buffers that grew beyond maxPooledBuffer are left to the garbage
// collector, so one large request does not pin memory.
const maxPooledBuffer = 1 << 20

var buffers = sync.Pool{New: func() any { return new([]byte) }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

// readBody appends the whole request body to buf, at most MaxBodyBytes. The
// buffer grows with what actually arrives rather than with what
// Content-Length promises, so a client cannot reserve memory it never sends.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return buf, fmt.Errorf("request body of %d bytes exceeds the %d-byte limit: %w", r.ContentLength, limit, &http.MaxBytesError{Limit: limit})
	}
	body := r.Body
	if r.ContentLength < 0 {
		// Chunked: net/http does not know the length, so bound it here.
		// (With a Content-Length, net/http never returns more than it.)
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	// One more byte than the body, so reading its end needs no growth.
	want := len(buf) + int(r.ContentLength+1)
	if r.ContentLength > 0 {
		buf = growBuffer(buf, int(min(r.ContentLength, 1<<20))+1, 0)
	}
	for {
		if len(buf) == cap(buf) {
			buf = growBuffer(buf, 512, want)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			var maxBytes *http.MaxBytesError
			if errors.As(err, &maxBytes) {
				return buf, fmt.Errorf("request body exceeds the %d-byte limit: %w", limit, err)
			}
			return buf, invalidf("read request body: %v", err)
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("encode response: %v", err))
		return
	}
	writeJSONBytes(w, status, b)
}

func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// writeError writes the protocol's error body {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg}) // marshalling a string cannot fail
	writeJSONBytes(w, status, b)
}

// modelLabel is the metrics label for a model name: the name when the model
// exists, "" otherwise, so unknown names sent by clients cannot grow the
// metrics without bound.
func (s *Server) modelLabel(name string) string {
	if _, _, err := s.repo.Lookup(name, ""); err != nil {
		return ""
	}
	return name
}
