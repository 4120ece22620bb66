package oiptarget

import (
	"bytes"
	"compress/gzip"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/verdict"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers that answer every inference with a well-framed success (HTTP 200
// with a correct Content-Length, gRPC status OK) whose body is not an
// inference response (issue 26). Only the sampled answers are decoded (see
// sample.go), so each run must have validation failures naming the reason,
// above the default failed-request bound: the verdict is failed (exit 3).
// Without the sampled check every one of these requests counted ok.

// garbageVerdict checks a run against a garbage server: some requests
// failed validation with a message containing want (or failed as class
// orClass, when not empty), none failed otherwise, and the run fails the
// default failed-request bound.
func garbageVerdict(t *testing.T, res *loadgen.Result, counts map[string]int, first map[string]string, want, orClass string) {
	t.Helper()
	if counts["validation"] == 0 && (orClass == "" || counts[orClass] == 0) {
		t.Fatalf("%d ok, failures %v: want validation failures", res.Counts.OK, counts)
	}
	for class := range counts {
		if class != "validation" && class != orClass {
			t.Errorf("failures %v, want validation failures only", counts)
		}
	}
	t.Logf("%d ok, %d failed: %.200s %.200s", res.Counts.OK, res.Counts.Errors, first["validation"], first[orClass])
	if msg, ok := first["validation"]; ok && !strings.Contains(msg, want) {
		t.Errorf("message %q, want it to contain %q", msg, want)
	}
	loadgen.EvaluateThresholds(res, nil)
	if v := loadgen.Judge(res); v.Status != verdict.Failed {
		t.Errorf("verdict %s %v (%d ok, %d failed): want failed", v.Status, v.Reasons, res.Counts.OK, res.Counts.Errors)
	}
}

// gzipBomb is a gzip body of 64 members of 16 MiB of zeros each: about
// 1 MB that inflates to 1 GiB.
func gzipBomb(t *testing.T) []byte {
	t.Helper()
	var member bytes.Buffer
	w, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, 16<<20))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(member.Bytes(), 64)
}

func TestGarbageRESTAnswers(t *testing.T) {
	tensor := func(shape, data string) string {
		return `{"name":"OUTPUT0","datatype":"INT32","shape":` + shape + `,"data":` + data + `}`
	}
	deep := 100_000
	bomb := gzipBomb(t)
	tests := []struct {
		name   string
		header map[string]string
		body   []byte
		want   string
	}{{
		name: "not JSON",
		body: []byte("<html><body>OK</body></html>"),
		want: "not an inference response: ",
	}, {
		name: "JSON nested 100,000 deep",
		body: []byte(`{"model_name":"add_sub","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":` +
			strings.Repeat("[", deep) + strings.Repeat("]", deep) + `}]}`),
		want: "not an inference response: ",
	}, {
		name: "shape of 2^62 elements",
		body: []byte(`{"model_name":"add_sub","outputs":[` + tensor("[4611686018427387904]", "[1,2,3]") + `]}`),
		want: "shape [4611686018427387904] needs 4611686018427387904 elements but the data is only 7 bytes",
	}, {
		name: "shape of 10 million elements with little data",
		body: []byte(`{"model_name":"add_sub","outputs":[` + tensor("[1,10000000]", "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]") + `]}`),
		want: "shape [1 10000000] needs 10000000 elements",
	}, {
		name:   "gzip bomb",
		header: map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/json"},
		body:   bomb,
		want:   "not an inference response: ",
	}, {
		name: "an error object",
		body: []byte(`{"error":"model is warming up"}`),
		want: "not an inference response: ",
	}, {
		name: "an output of another model",
		body: []byte(`{"model_name":"add_sub","outputs":[{"name":"LOGITS","datatype":"FP32","shape":[1],"data":[0.5]}]}`),
		want: `output "LOGITS" is not one of the model's outputs (OUTPUT0, OUTPUT1)`,
	}, {
		name: "outputs missing",
		body: []byte(`{"model_name":"add_sub","outputs":[]}`),
		want: `output "OUTPUT0" missing`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := hostileServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.Write(tc.body)
			})
			res, counts, first := hostileRun(t, srv, client.ProtocolHTTP, 5*time.Second)
			garbageVerdict(t, res, counts, first, tc.want, "")
		})
	}
}

// garbageCodec is a gRPC server codec that writes answer in place of every
// ModelInferResponse (protobuf for everything else).
type garbageCodec struct{ answer []byte }

func (c garbageCodec) Marshal(v any) (mem.BufferSlice, error) {
	if _, ok := v.(*inferencepb.ModelInferResponse); ok {
		return mem.BufferSlice{mem.SliceBuffer(c.answer)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (garbageCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (garbageCodec) Name() string { return "proto" }

// garbageGRPCServer serves add_sub's readiness and metadata; its ModelInfer
// answers OK with the codec's bytes.
type garbageGRPCServer struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
}

func (garbageGRPCServer) ServerLive(context.Context, *inferencepb.ServerLiveRequest) (*inferencepb.ServerLiveResponse, error) {
	return &inferencepb.ServerLiveResponse{Live: true}, nil
}

func (garbageGRPCServer) ServerReady(context.Context, *inferencepb.ServerReadyRequest) (*inferencepb.ServerReadyResponse, error) {
	return &inferencepb.ServerReadyResponse{Ready: true}, nil
}

func (garbageGRPCServer) ServerMetadata(context.Context, *inferencepb.ServerMetadataRequest) (*inferencepb.ServerMetadataResponse, error) {
	return &inferencepb.ServerMetadataResponse{Name: "garbage", Version: "1"}, nil
}

func (garbageGRPCServer) ModelReady(context.Context, *inferencepb.ModelReadyRequest) (*inferencepb.ModelReadyResponse, error) {
	return &inferencepb.ModelReadyResponse{Ready: true}, nil
}

func (garbageGRPCServer) ModelMetadata(context.Context, *inferencepb.ModelMetadataRequest) (*inferencepb.ModelMetadataResponse, error) {
	md := fixture.NewAddSub().Metadata()
	return oip.ModelMetadataToProto(&md), nil
}

func (garbageGRPCServer) ModelInfer(context.Context, *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	return &inferencepb.ModelInferResponse{}, nil // replaced by the codec
}

// garbageGRPCRun runs a short closed loop over protocol against a gRPC
// server answering every ModelInfer with answer.
func garbageGRPCRun(t *testing.T, protocol client.Protocol, answer []byte) (*loadgen.Result, map[string]int, map[string]string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.ForceServerCodecV2(garbageCodec{answer}))
	inferencepb.RegisterGRPCInferenceServiceServer(g, garbageGRPCServer{})
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	cfg := grpcConfig(lis.Addr().String(), "add_sub")
	cfg.Target.Protocol = protocol
	cfg.Load = loadgen.LoadConfig{Concurrency: 4, Duration: loadgen.Duration(time.Second), Interval: loadgen.Duration(250 * time.Millisecond)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := NewTarget(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	rec := &recording{Target: tg, counts: map[string]int{}, first: map[string]string{}}
	res, err := loadgen.Run(ctx, rec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, rec.counts, rec.first
}

func TestGarbageGRPCAnswers(t *testing.T) {
	outputs := []*inferencepb.ModelInferResponse_InferOutputTensor{
		{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1, 16}},
		{Name: "OUTPUT1", Datatype: "INT32", Shape: []int64{1, 16}},
	}
	manyRaw, err := proto.Marshal(&inferencepb.ModelInferResponse{ModelName: "add_sub", Outputs: outputs,
		RawOutputContents: make([][]byte, 1_000_000)})
	if err != nil {
		t.Fatal(err)
	}
	hugeShape, err := proto.Marshal(&inferencepb.ModelInferResponse{ModelName: "add_sub",
		Outputs:           []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{1 << 62}}},
		RawOutputContents: [][]byte{make([]byte, 64)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		answer  []byte
		want    string
		orClass string // the class of the client's refusal, if it has a cap that applies
	}{{
		name:   "a length beyond the message",
		answer: []byte("\x0a\x64add_sub"), // model_name of 100 bytes, 7 there
		want:   "not an inference response: decode ModelInferResponse (9 bytes): ",
	}, {
		name:   "an invalid field number",
		answer: []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
		want:   "not an inference response: decode ModelInferResponse (10 bytes): ",
	}, {
		name:   "text",
		answer: []byte("<html>OK</html>"),
		want:   "not an inference response: ",
	}, {
		name:   "a million raw_output_contents",
		answer: manyRaw,
		want:   "not an inference response: invalid message: 1000000 raw_output_contents for 2 outputs",
		// The client may refuse to keep a message that costs this much
		// to decode (Options.MaxMessageBytes): failed either way.
		orClass: "grpc_ResourceExhausted",
	}, {
		name:   "a shape of 2^62 elements",
		answer: hugeShape,
		want:   "not an inference response: ",
	}}
	for _, tc := range tests {
		for _, p := range []client.Protocol{client.ProtocolGRPCRaw, client.ProtocolGRPC} {
			t.Run(tc.name+"/"+string(p), func(t *testing.T) {
				res, counts, first := garbageGRPCRun(t, p, tc.answer)
				garbageVerdict(t, res, counts, first, tc.want, tc.orClass)
			})
		}
	}
}

// TestGarbageUncheckedWithCheckEveryZero: with --check-every 0 only framing
// and status are checked, so the same garbage counts ok: what the sampled
// check adds.
func TestGarbageUncheckedWithCheckEveryZero(t *testing.T) {
	srv := hostileServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>OK</html>"))
	})
	off := 0
	cfg := loadgen.Config{
		Target: loadgen.TargetConfig{HTTP: srv.URL, Model: "add_sub"},
		Inputs: loadgen.InputConfig{CheckEvery: &off},
		Load:   loadgen.LoadConfig{Concurrency: 2, Requests: 100},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := NewTarget(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	res, err := loadgen.Run(ctx, tg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.OK != 100 || res.Counts.Errors != 0 {
		t.Errorf("%d ok, %d errors: want every request ok with --check-every 0", res.Counts.OK, res.Counts.Errors)
	}
}
