package engine

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// In an extension spec a refusal that reports a server fault fails the
// check's own requirement, hard and with scope answer; in a core spec, and
// in an extension spec graded under OIP-REST-ERR-003, it is a refusal
// (judged once, by AvoidServerError).
func TestBeRejectedInExtensionSpecs(t *testing.T) {
	core := []string{LabelKeyTransport + "rest", LabelKeyReq + "OIP-REST-INFER-004"}
	ext := []string{LabelKeyTransport + "rest", LabelKeyFeature + "logging", LabelKeyReq + "OIP-EXT-LOG-006"}
	extERR := append([]string{LabelKeyReq + errStatusReq}, ext...)
	rpc := func(c codes.Code) *Call {
		return &Call{Method: methodPrefix + "RepositoryModelLoad", Err: status.Error(c, "x")}
	}
	for _, c := range []struct {
		name   string
		labels []string
		actual any
		fault  bool
	}{
		{"core 500", core, exchange(500, `{"error":"x"}`), false},
		{"extension 500", ext, exchange(500, `{"error":"x"}`), true},
		{"extension 501 (REST's UNIMPLEMENTED)", ext, exchange(501, `{"error":"x"}`), false},
		{"extension 503 HTML", ext, exchange(503, `<html>busy</html>`), true},
		{"extension 400", ext, exchange(400, `{"error":"x"}`), false},
		{"extension 404", ext, exchange(404, `{"error":"x"}`), false},
		{"extension 500 under OIP-REST-ERR-003", extERR, exchange(500, `{"error":"x"}`), false},
		{"core INTERNAL", core, rpc(codes.Internal), false},
		{"extension INTERNAL", ext, rpc(codes.Internal), true},
		{"extension UNKNOWN", ext, rpc(codes.Unknown), true},
		{"extension DATA_LOSS", ext, rpc(codes.DataLoss), true},
		{"extension INTERNAL, ERR-003 is REST's", extERR, rpc(codes.Internal), true},
		{"extension INVALID_ARGUMENT", ext, rpc(codes.InvalidArgument), false},
		{"extension UNIMPLEMENTED", ext, rpc(codes.Unimplemented), false},
		{"extension UNAVAILABLE", ext, rpc(codes.Unavailable), false},
	} {
		msg, g := match(beRejected(func() []string { return c.labels }), c.actual)
		switch {
		case c.fault && (msg == "" || g.hard == "" || !g.answer || g.negative):
			t.Errorf("%s: %q %+v, want a hard server fault on the answer", c.name, msg, g)
		case !c.fault && msg != "":
			t.Errorf("%s: %q, want a refusal", c.name, msg)
		}
	}
	// BeErrorResponse is BeRejected and the body: outside a spec (no
	// labels) a 500 with the body is an error response.
	if msg, _ := match(BeErrorResponse(), exchange(500, `{"error":"x"}`)); msg != "" {
		t.Errorf("BeErrorResponse outside a spec on a 500: %q", msg)
	}
}
