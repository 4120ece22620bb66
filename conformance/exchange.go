package conformance

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reports"
)

// maxEvidenceBody bounds the body kept in a report's evidence.
const maxEvidenceBody = 4 << 10

// evidencer is anything that can say what was sent and what came back.
type evidencer interface {
	evidence() *reports.Evidence
}

func evidenceOf(e evidencer) *reports.Evidence {
	if e == nil {
		return nil
	}
	return e.evidence()
}

// ----- REST -----

// exchange is one HTTP request and its answer, kept byte for byte.
type exchange struct {
	method    string
	path      string
	reqHeader http.Header
	reqBody   []byte
	status    int
	header    http.Header
	body      []byte
	err       error // no complete answer
}

func (e *exchange) evidence() *reports.Evidence {
	if e == nil {
		return nil
	}
	ev := &reports.Evidence{
		Request: reports.Message{
			Method: e.method, Target: e.path, Header: e.reqHeader,
			Body: renderBody(e.reqBody, headerLen(e.reqHeader)), BodyBytes: len(e.reqBody),
		},
	}
	if e.err != nil {
		ev.Response.Status = "no answer: " + e.err.Error()
		return ev
	}
	ev.Response = reports.Message{
		Status: fmt.Sprintf("HTTP %d", e.status), Header: e.header,
		Body: renderBody(e.body, headerLen(e.header)), BodyBytes: len(e.body),
	}
	return ev
}

// noAnswerError is a check that could not be made because the server gave
// no usable answer (timeout, connection failure, a body over the size
// limit). It fails the spec whatever the requirement's level: a server must
// answer every request, with a result or an error.
type noAnswerError struct{ msg string }

func (e noAnswerError) Error() string { return e.msg }

// isNoAnswer reports whether err (or any error joined into it) is a
// noAnswerError.
func isNoAnswer(err error) bool {
	var na noAnswerError
	return errors.As(err, &na)
}

// answered reports an error when no HTTP answer arrived.
func (e *exchange) answered() error {
	if e.err != nil {
		return noAnswerError{fmt.Sprintf("no answer to %s %s: %v", e.method, e.path, e.err)}
	}
	return nil
}

// got summarizes the answer for failure messages: "got 500 with body …".
func (e *exchange) got() string {
	if e.err != nil {
		return "got no answer (" + e.err.Error() + ")"
	}
	body := renderBody(e.body, headerLen(e.header))
	if body == "" {
		return fmt.Sprintf("got %d with an empty body", e.status)
	}
	return fmt.Sprintf("got %d with body %s", e.status, clip(body, 300))
}

// wantStatus checks the status code.
func (e *exchange) wantStatus(want int) error {
	if err := e.answered(); err != nil {
		return err
	}
	if e.status != want {
		return fmt.Errorf("%s %s: %s, want %d", e.method, e.path, e.got(), want)
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

// call is one unary RPC and its outcome.
type call struct {
	method string // full method name
	req    proto.Message
	resp   proto.Message // nil when the call failed
	err    error
}

func (c *call) evidence() *reports.Evidence {
	if c == nil {
		return nil
	}
	ev := &reports.Evidence{Request: reports.Message{Method: "RPC", Target: c.method, Body: protoText(c.req)}}
	if c.err != nil {
		st := status.Convert(c.err)
		ev.Response.Status = fmt.Sprintf("gRPC %s: %s", st.Code(), st.Message())
		return ev
	}
	ev.Response = reports.Message{Status: "gRPC OK", Body: protoText(c.resp)}
	return ev
}

// code is the call's status code.
func (c *call) code() codes.Code { return status.Code(c.err) }

// got summarizes the outcome for failure messages.
func (c *call) got() string {
	if c.err != nil {
		st := status.Convert(c.err)
		return fmt.Sprintf("got %s: %q", st.Code(), st.Message())
	}
	return "got OK with " + clip(protoText(c.resp), 300)
}

// wantOK checks that the call succeeded.
func (c *call) wantOK() error {
	switch {
	case c.err == nil:
		return nil
	case grpcNoAnswer(c.err) != nil || clientSide(c.err):
		return noAnswerError{fmt.Sprintf("%s: no usable answer: %s, want OK", shortMethod(c.method), c.got())}
	}
	return fmt.Errorf("%s: %s, want OK", shortMethod(c.method), c.got())
}

func shortMethod(m string) string {
	return m[strings.LastIndexByte(m, '/')+1:]
}

func protoText(m proto.Message) string {
	if m == nil {
		return ""
	}
	b, err := protojson.MarshalOptions{EmitUnpopulated: false}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("<unprintable %T: %v>", m, err)
	}
	return clip(string(b), maxEvidenceBody)
}

// invoke makes one RPC through fn with the client's timeout and metadata and
// records it. name is the RPC's short name ("ModelInfer").
func invoke[Q, R proto.Message](ctx context.Context, name string, req Q,
	fn func(context.Context, Q, ...grpc.CallOption) (R, error)) (R, *call) {
	c := &call{method: "/inference.GRPCInferenceService/" + name, req: req}
	cctx, cancel := tgt.grpc.Context(ctx)
	defer cancel()
	resp, err := fn(cctx, req)
	c.err = err
	if err == nil {
		c.resp = resp
	}
	tgt.noteAnswer(grpcNoAnswer(err), c.method)
	return resp, c
}

// grpcNoAnswer reports whether err means the server did not answer at all:
// the deadline passed, or the connection failed. gRPC reports both as
// statuses, so an UNAVAILABLE the server itself sent (say, "not ready") is
// told apart by its message.
func grpcNoAnswer(err error) error {
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

// statusMessage is the message of a gRPC status error.
func statusMessage(err error) string { return status.Convert(err).Message() }
