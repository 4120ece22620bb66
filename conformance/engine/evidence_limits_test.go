package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// A hostile server cannot make the report huge: a finding's evidence keeps
// a prefix and the size of what the server chose, whatever its size (the
// client caps a body at 8 MiB and a header block at 1 MiB).
func TestEvidenceBounded(t *testing.T) {
	const most = maxEvidenceBody + 512 // the text kept plus its markers
	huge := strings.Repeat("a", 1<<20)
	h := http.Header{"X-Huge": {huge}, "Content-Type": {"application/json"}}
	for i := range 500 {
		h.Add("X-Many-"+strconv.Itoa(i), "v")
	}
	e := &Exchange{Method: "POST", Path: "/v2/models/m/infer", Status: 200, Header: h, Body: []byte(strings.Repeat("1,", 5<<20))}
	ev := e.Evidence()
	size := 0
	for k, vs := range ev.Response.Header {
		for _, v := range vs {
			size += len(k) + len(v)
		}
	}
	if size > most || !strings.Contains(http.Header(ev.Response.Header).Get("…"), "bytes of headers in all") {
		t.Errorf("headers of %d bytes kept as %d bytes, want at most %d with a count of the rest", len(huge), size, most)
	}
	if v := http.Header(ev.Response.Header).Get("X-Huge"); v != "" && !strings.HasSuffix(v, "(1048576 bytes)") {
		t.Errorf("a 1 MiB header value kept as %q…, want its start and its size", v[:min(len(v), 40)])
	}
	if len(ev.Response.Body) > most || ev.Response.BodyBytes != 10<<20 {
		t.Errorf("a 10 MB body kept as %d bytes (size %d), want at most %d and its size", len(ev.Response.Body), ev.Response.BodyBytes, most)
	}

	msg := status.Error(codes.Internal, huge)
	c := &Call{Method: methodPrefix + "ModelInfer", Err: msg}
	if st := c.Evidence().Response.Status; len(st) > most || !strings.HasSuffix(st, "bytes)") {
		t.Errorf("a 1 MiB status message kept as %d bytes, want at most %d with its size", len(st), most)
	}
	if got := c.Got(); len(got) > 400 {
		t.Errorf("Got is %d bytes for a 1 MiB status message", len(got))
	}
	s := &StreamCall{Ended: true, End: msg}
	if st := s.Evidence().Response.Status; len(st) > most {
		t.Errorf("a stream's 1 MiB status message kept as %d bytes", len(st))
	}
	if got := s.Got(); len(got) > 400 {
		t.Errorf("a stream's Got is %d bytes", len(got))
	}
	e = &Exchange{Method: "GET", Path: "/", Err: errors.New(huge)}
	if st := e.Evidence().Response.Status; len(st) > most {
		t.Errorf("a 1 MiB error kept as %d bytes", len(st))
	}
}

// TestProtoTextTrimmed: a message too large to render whole renders as
// the same evidence from a copy whose large fields are cut, and the
// message itself is left whole.
func TestProtoTextTrimmed(t *testing.T) {
	raw := make([]byte, 7<<20)
	for i := range raw {
		raw[i] = byte(i)
	}
	long := strings.Repeat("é", 3000) // 6000 bytes of two-byte runes
	list := &pb.ModelInferResponse_InferOutputTensor{Name: "o", Datatype: "INT64",
		Contents: &pb.InferTensorContents{Int64Contents: make([]int64, 1<<20)}}
	// protojson writes fields in number order: id, outputs, raw contents;
	// the evidence's clip falls in the first large one.
	for name, m := range map[string]*pb.ModelInferResponse{
		"a long id":    {ModelName: "m", Id: long, Outputs: []*pb.ModelInferResponse_InferOutputTensor{list}, RawOutputContents: [][]byte{raw}},
		"a long list":  {ModelName: "m", Outputs: []*pb.ModelInferResponse_InferOutputTensor{list}, RawOutputContents: [][]byte{raw}},
		"a long bytes": {ModelName: "m", RawOutputContents: [][]byte{raw}},
	} {
		size := proto.Size(m)
		got := protoText(m)
		if proto.Size(m) != size {
			t.Fatalf("%s: protoText changed the message", name)
		}
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			t.Fatal(err)
		}
		if want := clip(c.String(), maxEvidenceBody); got != want {
			t.Errorf("%s: trimmed evidence differs from the whole message's:\n got %.200s…\nwant %.200s…", name, got, want)
		}
	}
}
