package engine

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/conformance/report"
)

// reproducer is the shell command that sends ev's request again, inside
// the running spec's setup (setup.go). It is "" when ev has no request.
func reproducer(ev Evidencer) string {
	return report.WithSetup(Reproducer(ev), setupFor(ev))
}

// Reproducer is the shell command that sends ev's request again, without
// the running spec's setup (a setup step's own request uses it), built
// from the request exactly as it was sent: the evidence keeps only a few
// KiB of a body, and a command built from that would not send the same.
func Reproducer(ev Evidencer) string {
	var targets report.Targets
	if current != nil {
		targets = report.Targets{HTTP: current.cfg.HTTPURL, GRPC: current.cfg.GRPCAddr}
	}
	evidence := ev.Evidence()
	// A body over report.MaxReproducerBody is written by a generating
	// command when it is regular enough, else clipped and marked not exact.
	if body, ok := sentBody(ev); ok {
		return report.ReproduceExact(evidence, targets, body)
	}
	return report.Reproduce(evidence, targets)
}

// sentBody is the request body of ev as sent: the HTTP body, or the RPC's
// message as protojson (one message a line for a stream, then
// "(half-closed)" when the suite closed its side, as in the evidence).
// ok is false when ev does not keep it.
func sentBody(ev Evidencer) (body []byte, ok bool) {
	switch v := ev.(type) {
	case *Exchange:
		if v == nil {
			return nil, false
		}
		return v.ReqBody, true
	case *Object:
		return sentBody(v.Ex)
	case *InferResponse:
		return sentBody(v.Ex)
	case *Call:
		if v == nil {
			return nil, false
		}
		return protoLine(v.Req)
	case *StreamCall:
		if v == nil {
			return nil, false
		}
		var lines [][]byte
		for _, r := range v.Sent {
			line, ok := protoLine(r)
			if !ok {
				return nil, false
			}
			lines = append(lines, line)
		}
		if v.HalfClosed {
			lines = append(lines, []byte("(half-closed)"))
		}
		return bytes.Join(lines, []byte("\n")), true
	}
	return nil, false
}

// protoLine is a message as compact protojson, whole (protoText clips it
// for the evidence).
func protoLine(m proto.Message) ([]byte, bool) {
	if m == nil {
		return nil, true
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, false
	}
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return b, true
	}
	return c.Bytes(), true
}
