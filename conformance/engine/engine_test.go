package engine

import (
	"math"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/conformance/report"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// The grading of a failed check: the catalog's class, unless the matcher
// or the spec says why not.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		req  string
		g    grading
		want report.Class
	}{
		{"OIP-REST-INFER-006", grading{}, report.ClassFail},                          // MUST, server
		{"OIP-REST-ERR-003", grading{}, report.ClassWarning},                         // SHOULD
		{"OIP-REST-ERR-003", grading{hard: "5xx"}, report.ClassFail},                 // a 5xx whatever the level
		{"OIP-REST-INFER-014", grading{hard: "5xx", soft: "A-18"}, report.ClassFail}, // hard wins in one grading
		{"OIP-REST-INFER-006", grading{soft: "A-03"}, report.ClassWarning},
		{"OIP-REST-INFER-010", grading{negative: true}, report.ClassLenient}, // binds clients
		{"OIP-REST-INFER-010", grading{}, report.ClassLenient},               // binds clients
		{"OIP-GRPC-INFER-009", grading{negative: true}, report.ClassLenient}, // binds both: a request it accepted
		{"OIP-GRPC-INFER-009", grading{}, report.ClassFail},                  // binds both: what it sent
		{"OIP-REST-MMETA-012", grading{negative: true}, report.ClassFail},    // binds servers, MUST
		{"OIP-REST-INFER-022", grading{negative: true}, report.ClassWarning}, // binds servers, implied
		{"OIP-REST-INFER-004", grading{fault: true}, report.ClassFail},       // a 5xx where the test asks a 4xx, MUST
		{"OIP-REST-INFER-024", grading{fault: true}, report.ClassWarning},    // the same, implied
		{"OIP-GEN-005", grading{}, report.ClassFail},                         // re-graded
		{"", grading{}, report.ClassFail},                                    // the whole spec: no answer, not live
		{"OIP-REST-SMETA-003", grading{noAnswer: true}, report.ClassFail},
	} {
		if got := classify(c.req, c.g); got != c.want {
			t.Errorf("classify(%s, %+v) = %s, want %s", c.req, c.g, got, c.want)
		}
	}
}

func f32s(v ...float32) tensor.Tensor {
	return tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.FP32, Shape: []int64{1, int64(len(v))}, Data: v}
}

func TestCompareTensor(t *testing.T) {
	nan1, nan2 := math.Float32frombits(0x7fc00000), math.Float32frombits(0x7fc00001)
	// Binary, raw and typed contents carry a NaN's bits: its payload counts.
	if err := compareTensor(f32s(1, nan1), f32s(1, nan2), false); err == nil || !strings.Contains(err.Error(), "0x7fc00001") {
		t.Errorf("NaN payloads differ bit for bit: %v, want a difference showing the bits", err)
	}
	if err := compareTensor(f32s(1, nan1), f32s(1, nan2), true); err != nil {
		t.Errorf("near mode (JSON): %v; any NaN equals any NaN", err)
	}
	if err := compareTensor(f32s(nan1), f32s(1), true); err == nil {
		t.Error("NaN equals 1 in near mode")
	}
	negZero := float32(math.Copysign(0, -1))
	if err := compareTensor(f32s(0), f32s(negZero), false); err == nil || !strings.Contains(err.Error(), "0x80000000") {
		t.Errorf("-0 vs 0 bit for bit: %v, want a difference showing the bits", err)
	}
	if err := compareTensor(f32s(1), f32s(1.0000001), true); err != nil {
		t.Errorf("near mode: %v", err)
	}
	h := func(v ...tensor.Float16) tensor.Tensor {
		return tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.FP16, Shape: []int64{int64(len(v))}, Data: v}
	}
	if err := compareTensor(h(0x7e00), h(0x7e01), false); err == nil {
		t.Error("FP16 NaNs 0x7e00 and 0x7e01 are equal bit for bit")
	}
	if err := compareTensor(h(0x7e00), h(0x7e01), true); err != nil {
		t.Errorf("FP16 NaNs in near mode: %v", err)
	}
	if err := compareTensor(h(0x3c00), h(0x3c01), false); err == nil {
		t.Error("FP16 0x3c00 equals 0x3c01 bit for bit")
	}
	want := tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.Int64, Shape: []int64{2, 3}, Data: []int64{1, 2, 3, 4, math.MaxInt64, 6}}
	got := tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.Int64, Shape: []int64{2, 3}, Data: []int64{1, 2, 3, 4, math.MaxInt64 - 1, 6}}
	if err := compareTensor(want, got, true); err == nil || !strings.Contains(err.Error(), "element 4 [1 1] is 9223372036854775806, want 9223372036854775807") {
		t.Errorf("int64: %v, want the first differing element with its index", err)
	}
	got.Datatype = tensor.Uint64
	if err := compareTensor(want, got, false); err == nil || !strings.Contains(err.Error(), "datatype UINT64, want INT64") {
		t.Errorf("datatype: %v", err)
	}
}

func TestRoutes(t *testing.T) {
	for path, want := range map[string]string{
		"/v2/models/add_sub/infer":              "REST POST /v2/models/{m}/infer",
		"/v2/models/x/versions/2/infer":         "REST POST /v2/models/{m}/versions/{v}/infer",
		"/v2":                                   "REST POST /v2",
		"/v2/":                                  "REST POST /v2/",
		"/v2/models/stats":                      "REST POST /v2/models/stats",
		"/v2/models/identity_fp32/config?x=1":   "REST POST /v2/models/{m}/config",
		"/v2/models/does_not_exist/ready":       "REST POST /v2/models/{m}/ready",
		"/v2/repository/models/a/load":          "REST POST /v2/repository/models/a/load",
		"/v2/models/versioned/versions/1/ready": "REST POST /v2/models/{m}/versions/{v}/ready",
	} {
		if got := restRoute(http.MethodPost, path); got != want {
			t.Errorf("restRoute(%s) = %s, want %s", path, got, want)
		}
	}
	h := newRouteHealth()
	r := restRoute(http.MethodPost, "/v2/models/a/infer")
	h.timedOut(r, errTimeout{})
	if err := h.check(restRoute(http.MethodPost, "/v2/models/b/infer")); err == nil || !strings.Contains(err.Error(), "route does not answer: REST POST /v2/models/{m}/infer") {
		t.Errorf("another model's infer route: %v, want it known not to answer", err)
	}
	if err := h.check(restRoute(http.MethodGet, "/v2/models/b")); err != nil {
		t.Errorf("metadata route: %v", err)
	}
}

type errTimeout struct{}

func (errTimeout) Error() string { return "context deadline exceeded" }

func exchange(status int, body string) *Exchange {
	return &Exchange{Method: http.MethodPost, Path: "/v2/models/add_sub/infer", Status: status,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}

// match runs m on actual and returns its failure and grading.
func match(m any, actual any) (string, grading) {
	mm := m.(interface {
		Match(any) (bool, error)
		FailureMessage(any) string
	})
	if ok, _ := mm.Match(actual); ok {
		return "", grading{}
	}
	var g grading
	if gm, ok := m.(gradedMatcher); ok {
		g = gm.grading()
	}
	return mm.FailureMessage(actual), g
}

func TestStatusAndErrorMatchers(t *testing.T) {
	if msg, g := match(BeRejected(), exchange(200, `{}`)); msg == "" || !g.negative {
		t.Errorf("BeRejected on a 200: %q %+v, want a negative failure", msg, g)
	}
	if msg, _ := match(BeRejected(), exchange(500, `{"error":"x"}`)); msg != "" {
		t.Errorf("BeRejected on a 500: %q; a 5xx is an error status (judged by AvoidServerError)", msg)
	}
	if msg, g := match(AvoidServerError(), exchange(503, ``)); msg == "" || g.hard == "" {
		t.Errorf("AvoidServerError on a 503: %q %+v, want a hard failure", msg, g)
	}
	if msg, g := match(HaveTypicalErrorStatus(), exchange(422, `{"error":"x"}`)); !strings.Contains(msg, "want 400") || g.hard != "" {
		t.Errorf("HaveTypicalErrorStatus on a 422: %q %+v, want a plain failure", msg, g)
	}
	for body, ok := range map[string]bool{`{"error":"bad"}`: true, `{"error":42}`: false, `{"detail":"x"}`: false, `<html>`: false} {
		msg, _ := match(HaveErrorBody(), exchange(400, body))
		if (msg == "") != ok {
			t.Errorf("HaveErrorBody(%s): %q", body, msg)
		}
	}
	if msg, _ := match(BeErrorResponse(), exchange(404, `{"error":"no such model"}`)); msg != "" {
		t.Errorf("BeErrorResponse: %q", msg)
	}
	if msg, _ := match(HaveJSONString("id", "42"), exchange(200, `{"id":42}`)); !strings.Contains(msg, `"id" is 42, want a string`) {
		t.Errorf("HaveJSONString on a number: %q", msg)
	}
	c := &Call{Method: methodPrefix + "ModelInfer", Err: status.Error(codes.NotFound, "no model")}
	if msg, _ := match(HaveCode(codes.InvalidArgument), c); !strings.Contains(msg, "got NotFound, recommended InvalidArgument") {
		t.Errorf("HaveCode: %q", msg)
	}
	made := &Call{Method: methodPrefix + "ModelMetadata", Err: status.Error(codes.Internal, "grpc: failed to unmarshal the response")}
	if msg, g := match(BeOK(), made); msg == "" || !g.noAnswer {
		t.Errorf("BeOK on a client-made status: %q %+v, want no usable answer", msg, g)
	}
	if msg, g := match(BeRejected(), made); msg == "" || g.negative {
		t.Errorf("BeRejected on a client-made status: %q %+v, want a failure that is not the server accepting", msg, g)
	}
}

// HaveOutputs finds outputs by name in any form the server chose.
func TestHaveOutputs(t *testing.T) {
	want := tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.Int32, Shape: []int64{2, 2}, Data: []int32{1, 2, 3, 4}}
	nested := exchange(200, `{"model_name":"m","outputs":[{"name":"X","datatype":"BOOL","shape":[1],"data":[true]},{"name":"OUTPUT0","datatype":"INT32","shape":[2,2],"data":[[1,2],[3,4]]}]}`)
	if msg, _ := match(HaveOutputs(want), nested); msg != "" {
		t.Errorf("nested JSON output: %s", msg)
	}
	wrong := exchange(200, `{"outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[2,2],"data":[1,2,4,3]}]}`)
	if msg, _ := match(HaveOutputs(want), wrong); !strings.Contains(msg, "element 2 [1 0] is 4, want 3") {
		t.Errorf("wrong element: %q", msg)
	}
	if msg, _ := match(HaveOutputs(want), exchange(400, `{"error":"x"}`)); !strings.Contains(msg, "want 200") {
		t.Errorf("a 400: %q", msg)
	}
	raw, _ := tensor.EncodeRaw(want)
	call := &Call{Method: methodPrefix + "ModelInfer", Resp: &pb.ModelInferResponse{
		Outputs:           []*pb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{2, 2}}},
		RawOutputContents: [][]byte{raw}}}
	if msg, _ := match(HaveOutputs(want), call); msg != "" {
		t.Errorf("raw gRPC output: %s", msg)
	}
	if msg, _ := match(HaveOnlyOutputs("OUTPUT0"), nested); !strings.Contains(msg, `output "X" was returned`) {
		t.Errorf("HaveOnlyOutputs: %q", msg)
	}
}

// TestProtoTextCompact: gRPC evidence is compact JSON, the same in every
// build (protojson itself varies its spacing on purpose).
func TestProtoTextCompact(t *testing.T) {
	got := protoText(&pb.ModelInferRequest{ModelName: "add_sub", Id: "a b", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Shape: []int64{1, 2}}}})
	want := `{"modelName":"add_sub","id":"a b","inputs":[{"name":"INPUT0","shape":["1","2"]}]}`
	if got != want {
		t.Errorf("protoText = %s, want %s", got, want)
	}
}
