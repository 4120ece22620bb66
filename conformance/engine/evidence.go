package engine

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/oip"
)

// maxEvidenceBody bounds the body kept in a report's evidence.
const maxEvidenceBody = 4 << 10

// Evidencer is anything that can say what was sent and what came back: an
// [Exchange], a [Call], or a value derived from one.
type Evidencer interface {
	Evidence() *report.Evidence
}

// ----- REST -----

// Exchange is one HTTP request and its answer, kept byte for byte.
type Exchange struct {
	Method    string
	Path      string
	ReqHeader http.Header
	ReqBody   []byte
	Status    int
	Header    http.Header
	Body      []byte
	// Err is set when no complete answer arrived (timeout, connection
	// failure, a body over the size limit).
	Err error

	parsed   *InferResponse // cached by AsInferResponse
	parseErr error
	reported bool // its missing answer is recorded already

	// The schema check of a 2xx body (schema.go): done once, its problems,
	// the requirements already graded, and the ambiguity that turns its
	// problems into notes.
	schemaDone     bool
	schema         []SchemaProblem
	schemaReported map[string]bool
	tolerated      string
}

// Evidence renders the exchange for the report.
func (e *Exchange) Evidence() *report.Evidence {
	if e == nil {
		return nil
	}
	ev := &report.Evidence{
		Request: report.Message{
			Method: e.Method, Target: e.Path, Header: e.ReqHeader,
			Body: renderBody(e.ReqBody, headerLen(e.ReqHeader)), BodyBytes: len(e.ReqBody),
		},
	}
	if e.Err != nil {
		ev.Response.Status = clipText("no answer: "+e.Err.Error(), maxEvidenceBody)
		return ev
	}
	ev.Response = report.Message{
		Status: fmt.Sprintf("HTTP %d", e.Status), Header: evidenceHeader(e.Header),
		Body: renderBody(e.Body, headerLen(e.Header)), BodyBytes: len(e.Body),
	}
	return ev
}

// Got summarizes the answer for messages: "got 500 with body …".
func (e *Exchange) Got() string {
	if e.Err != nil {
		return "got no answer (" + e.Err.Error() + ")"
	}
	body := renderBody(e.Body, headerLen(e.Header))
	if body == "" {
		return fmt.Sprintf("got %d with an empty body", e.Status)
	}
	return fmt.Sprintf("got %d with body %s", e.Status, clip(body, 300))
}

// What is "POST /v2/models/add_sub/infer".
func (e *Exchange) What() string { return e.Method + " " + e.Path }

// noAnswer is the reason the exchange has no usable answer, or nil.
func (e *Exchange) noAnswer() error {
	if e.Err != nil {
		return fmt.Errorf("no answer to %s: %v", e.What(), e.Err)
	}
	return nil
}

// headerLen is the Inference-Header-Content-Length value, or -1.
func headerLen(h http.Header) int {
	v := h.Get(oip.HeaderInferenceHeaderContentLength)
	if v == "" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// renderBody shows a body as text when it is text, and the JSON header plus
// a hex dump of the binary tail when it carries binary data.
func renderBody(b []byte, jsonLen int) string {
	if len(b) == 0 {
		return ""
	}
	if jsonLen >= 0 && jsonLen <= len(b) {
		head := renderBody(b[:jsonLen], -1)
		tail := b[jsonLen:]
		return fmt.Sprintf("%s\n[binary tail, %d bytes] %s", head, len(tail), hexClip(tail, 256))
	}
	if utf8.Valid(b) && printable(b) {
		return clip(string(b), maxEvidenceBody)
	}
	return fmt.Sprintf("[%d bytes, not text] %s", len(b), hexClip(b, 512))
}

func printable(b []byte) bool {
	for _, c := range string(b) {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}

func hexClip(b []byte, n int) string {
	if len(b) > n {
		return hex.EncodeToString(b[:n]) + "…"
	}
	return hex.EncodeToString(b)
}

// ----- gRPC -----

// Call is one unary RPC and its outcome.
type Call struct {
	Method string // full method name
	Req    proto.Message
	Resp   proto.Message // nil when the call failed
	Err    error
	// Wire reports a reply that decoded only tolerantly (ModelMetadata whose
	// field 6 is not OIP-PROTO's properties, see [ModelMetadata]).
	Wire error

	reported bool // its missing answer is recorded already
}

// Evidence renders the call for the report.
func (c *Call) Evidence() *report.Evidence {
	if c == nil {
		return nil
	}
	ev := &report.Evidence{Request: report.Message{Method: "RPC", Target: c.Method, Body: protoText(c.Req)}}
	if c.Err != nil {
		st := status.Convert(c.Err)
		ev.Response.Status = clipText(fmt.Sprintf("gRPC %s: %s", st.Code(), st.Message()), maxEvidenceBody)
		return ev
	}
	ev.Response = report.Message{Status: "gRPC OK", Body: protoText(c.Resp)}
	return ev
}

// Code is the call's status code.
func (c *Call) Code() codes.Code { return status.Code(c.Err) }

// Name is the short method name ("ModelInfer").
func (c *Call) Name() string { return c.Method[strings.LastIndexByte(c.Method, '/')+1:] }

// Got summarizes the outcome for messages.
func (c *Call) Got() string {
	if c.Err != nil {
		st := status.Convert(c.Err)
		return fmt.Sprintf("got %s: %q", st.Code(), clipText(st.Message(), 300))
	}
	return "got OK with " + clip(protoText(c.Resp), 300)
}

// noAnswer is the reason the call has no answer at all, or nil.
func (c *Call) noAnswer() error {
	if err := GRPCNoAnswer(c.Err); err != nil {
		return fmt.Errorf("%s: no answer: %v", c.Name(), err)
	}
	return nil
}

func protoText(m proto.Message) string {
	if m == nil {
		return ""
	}
	if proto.Size(m) > maxEvidenceBody {
		m = trimmedCopy(m.ProtoReflect()).Interface()
	}
	b, err := protojson.MarshalOptions{EmitUnpopulated: false}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("<unprintable %T: %v>", m, err)
	}
	// protojson varies its spacing from build to build on purpose;
	// compacted, the evidence in committed reports changes only when the
	// answer does.
	var c bytes.Buffer
	if json.Compact(&c, b) == nil {
		b = c.Bytes()
	}
	return clip(string(b), maxEvidenceBody)
}

// trimmedCopy copies m with, at any depth, each bytes or string field cut
// to maxEvidenceBody bytes and each list to maxEvidenceBody entries (the
// large values are shared, not copied): rendering a server's 7 MB raw
// output as JSON for every finding took conform five minutes. Each cut
// field still renders to more than the maxEvidenceBody characters the
// evidence keeps (base64 grows bytes, a list entry takes two characters
// or more), so the evidence is the same as the whole message's.
func trimmedCopy(m protoreflect.Message) protoreflect.Message {
	out := m.New()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			out.Set(fd, v)
		case fd.IsList():
			from, to := v.List(), out.Mutable(fd).List()
			for i := range min(from.Len(), maxEvidenceBody) {
				to.Append(trimmedValue(fd, from.Get(i)))
			}
		default:
			out.Set(fd, trimmedValue(fd, v))
		}
		return true
	})
	return out
}

// trimmedValue is v, a value of fd, as trimmedCopy keeps it.
func trimmedValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return protoreflect.ValueOfMessage(trimmedCopy(v.Message()))
	case protoreflect.BytesKind:
		if b := v.Bytes(); len(b) > maxEvidenceBody {
			return protoreflect.ValueOfBytes(b[:maxEvidenceBody])
		}
	case protoreflect.StringKind:
		if s := v.String(); len(s) > maxEvidenceBody {
			return protoreflect.ValueOfString(cutString(s))
		}
	}
	return v
}

// cutString is s cut to maxEvidenceBody bytes at a rune's start (protojson
// refuses a string that is not UTF-8).
func cutString(s string) string {
	cut := maxEvidenceBody
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// GRPCNoAnswer reports whether err means the server did not answer at all:
// the deadline passed, or the connection failed. gRPC reports both as
// statuses, so an UNAVAILABLE the server itself sent (say, "not ready") is
// told apart by its message.
func GRPCNoAnswer(err error) error {
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return err
	case codes.Unavailable:
		msg := strings.ToLower(status.Convert(err).Message())
		for _, s := range []string{"connection", "transport", "eof", "closing", "dial"} {
			if strings.Contains(msg, s) {
				return err
			}
		}
	}
	return nil
}

// ClientSide reports a status that grpc-go made up on the client because
// the server's message could not be read (not a protobuf, too large, bad
// compression); the server did not send it.
func ClientSide(err error) bool {
	msg := status.Convert(err).Message()
	for _, p := range []string{"grpc: failed to unmarshal", "grpc: received message larger than max", "grpc: failed to decompress", "grpc: Decompressor is not installed"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// isTimeout reports an error that means the call's time ran out, the one
// kind of missing answer that marks a route as not answering.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// clipText is s, or when longer than n bytes its start and its length: a
// server chooses its header values and status messages, up to the
// client's header cap (1 MiB), and a report keeps one per finding.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s (%d bytes)", clip(s, n), len(s))
}

// evidenceHeader is h for the evidence: whole when it is small, otherwise
// each value clipped and the fields, in name order, up to maxEvidenceBody
// bytes, with a last field "…" counting the rest.
func evidenceHeader(h http.Header) http.Header {
	size := 0
	for k, vs := range h {
		for _, v := range vs {
			size += len(k) + len(v)
		}
	}
	if size <= maxEvidenceBody {
		return h
	}
	out := http.Header{}
	kept, left := 0, 0
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			if v = clipText(v, 256); kept+len(k)+len(v) > maxEvidenceBody {
				left++
				continue
			}
			kept += len(k) + len(v)
			out[k] = append(out[k], v)
		}
	}
	if left > 0 {
		out["…"] = []string{fmt.Sprintf("%d more header values (%d bytes of headers in all)", left, size)}
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// errs joins non-nil errors into one, one per line; nil if there are none.
func errs(list ...error) error { return errors.Join(list...) }
