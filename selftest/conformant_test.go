package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// variants are servers that differ from the reference server only where
// the catalog (§5) says conformant servers differ. Each must get no failure;
// warned lists the warnings the catalog prescribes for its choices.
var variants = []breakage{
	{
		// What Triton does (catalog §5 "Observed").
		name: "triton-like",
		rest: &restHook{
			serve: func(w http.ResponseWriter, r *http.Request) bool {
				// FP16/BF16 data in JSON is refused with 400 (an
				// input read from shared memory carries no JSON data).
				if isInfer(r) && r.Header.Get("Content-Type") == "application/json" &&
					(strings.Contains(r.URL.Path, "identity_fp16") || strings.Contains(r.URL.Path, "identity_bf16")) &&
					bytes.Contains(requestBody(r), []byte(`"data"`)) {
					jsonError(w, 400, `{"error":"receiving FP16 data via JSON is not supported. Please use the binary data format"}`)
					return true
				}
				// only /v2 is routed.
				if r.URL.Path == "/v2/" {
					jsonError(w, 404, `{"error":"Not Found"}`)
					return true
				}
				return false
			},
			out: func(r *http.Request, a *answer) {
				p := r.URL.Path
				switch {
				case strings.HasPrefix(p, "/v2/health/") || strings.HasSuffix(p, "/ready"):
					// status only, empty body, 400 for false.
					if a.status == 404 {
						a.status = 400
					}
					a.header.Set("Content-Type", "text/plain")
					a.body = nil
				case a.status == 404:
					// unknown model or version as 400.
					a.status = 400
				case isInfer(r) && a.status == 400 && strings.Contains(string(a.body), "elements, shape"):
					// an element-count mismatch is INTERNAL, HTTP 500.
					a.status = 500
				case r.Method == http.MethodGet && strings.HasPrefix(p, "/v2/models/") && a.status == 200:
					editJSON(a, func(m map[string]any) { m["platform"] = "onnxruntime_onnx" })
				case isInfer(r) && a.status == 200:
					editJSON(a, func(m map[string]any) {
						// output order is not specified.
						if outs, ok := m["outputs"].([]any); ok && a.header.Get("Inference-Header-Content-Length") == "" {
							slices.Reverse(outs)
						}
					})
				}
			},
		},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if status.Code(err) == codes.NotFound {
				if _, ok := req.(*pb.ModelReadyRequest); ok {
					// OK with ready=false for an unknown model.
					return &pb.ModelReadyResponse{Ready: false}, nil
				}
				// unknown model as INVALID_ARGUMENT.
				return nil, status.Error(codes.InvalidArgument, status.Convert(err).Message())
			}
			if r, ok := resp.(*pb.ModelInferResponse); ok && err == nil {
				toRawOutputs(r) // Triton always fills raw_output_contents
			}
			return resp, err
		},
		warned: []string{"OIP-REST-ERR-003", "OIP-REST-INFER-014", "OIP-REST-DATA-011"},
	},
	{
		// What KServe Python and MLServer do (catalog §5 "Observed"). Like
		// interop/kserve it cannot deploy the versioned
		// fixture: version specs do not apply, the verdict is not
		// partial.
		name: "kserve-like",
		rest: &restHook{
			serve: func(w http.ResponseWriter, r *http.Request) bool {
				if strings.HasPrefix(r.URL.Path, "/v2/models/versioned") {
					jsonError(w, 404, `{"error":"Model with name versioned does not exist."}`)
					return true
				}
				// versioned routes are not implemented.
				if strings.Contains(r.URL.Path, "/versions/") {
					jsonError(w, 501, `{"error":"Model versioning not supported yet"}`)
					return true
				}
				return false
			},
			out: func(r *http.Request, a *answer) {
				p := r.URL.Path
				if a.header.Get("Content-Type") == "application/json" {
					a.header.Set("Content-Type", "application/json; charset=utf-8")
				}
				switch {
				case strings.HasSuffix(p, "/ready") && a.status == 404 && !strings.Contains(p, "//"):
					a.status = 503 // ModelNotReady is 503 (an empty name is a routing 404)
				case r.Method == http.MethodGet && strings.HasPrefix(p, "/v2/models/") && a.status == 200:
					editJSON(a, func(m map[string]any) {
						delete(m, "versions")
						m["platform"] = ""
						for _, k := range []string{"inputs", "outputs"} {
							list, _ := m[k].([]any)
							for _, t := range list {
								t.(map[string]any)["parameters"] = map[string]any{"content_type": "np"}
							}
						}
					})
				case isInfer(r) && a.status == 200:
					editJSON(a, func(m map[string]any) {
						delete(m, "model_version")
						m["parameters"] = map[string]any{"content_type": "np", "headers": map[string]any{"x": "y"}}
						for _, o := range outputs(m) {
							params, _ := o["parameters"].(map[string]any)
							if params == nil {
								params = map[string]any{}
							}
							params["content_type"] = "np"
							o["parameters"] = params
							// nested data is as good as flat.
							if d, ok := o["data"].([]any); ok {
								o["data"] = nest(d, o["shape"])
							}
						}
					})
				}
			},
		},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if modelName(req) == "versioned" {
				return nil, status.Error(codes.NotFound, "Model with name versioned does not exist.")
			}
			resp, err := h(ctx, req)
			switch r := resp.(type) {
			case *pb.ModelMetadataResponse:
				if r != nil {
					r.Versions, r.Platform = nil, ""
				}
			case *pb.ModelInferResponse:
				if r != nil {
					r.ModelVersion = ""
				}
			}
			return resp, err
		},
		// A-02 also covers the model repository's not-ready checks.
		warned: []string{"OIP-REST-HEALTH-003", "OIP-REST-HEALTH-010", "OIP-EXT-REPO-010", "OIP-EXT-REPO-011"},
	},
}

// TestConformantVariants: servers that differ from the reference only in
// ways the catalog accepts are never failed.
func TestConformantVariants(t *testing.T) {
	for _, b := range variants {
		t.Run(b.name, func(t *testing.T) {
			httpURL, grpcAddr := brokenServer(t, b)
			run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
			if run.report == nil {
				t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
			}
			if failed := run.report.WithStatus("failed"); len(failed) > 0 {
				t.Errorf("failed requirements %v, want none\n%s", failed, failureLines(run.output))
			}
			warned := run.report.WithStatus("warning")
			for _, id := range b.warned {
				if !slices.Contains(warned, id) {
					t.Errorf("%s is not a warning (warnings: %v)", id, warned)
				}
			}
			if extra := without(warned, b.warned); len(extra) > 0 {
				t.Errorf("unexpected warnings %v\n%s", extra, failureLines(run.output))
			}
			if run.exit != 0 {
				t.Errorf("exit %d, want 0\n%s", run.exit, run.output)
			}
		})
	}
}

func without(list, drop []string) []string {
	var out []string
	for _, x := range list {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// nest reshapes flat JSON data into nested arrays following shape.
func nest(flat []any, shape any) any {
	dims, _ := shape.([]any)
	if len(dims) <= 1 {
		return flat
	}
	rows, err := dims[0].(json.Number).Int64()
	if err != nil || rows <= 0 || len(flat)%int(rows) != 0 {
		return flat
	}
	per := len(flat) / int(rows)
	out := make([]any, rows)
	for r := range out {
		out[r] = nest(flat[r*per:(r+1)*per], dims[1:])
	}
	return out
}

// toRawOutputs moves typed output contents to raw_output_contents.
func toRawOutputs(r *pb.ModelInferResponse) {
	if len(r.RawOutputContents) > 0 {
		return
	}
	var raw [][]byte
	for _, o := range r.Outputs {
		t, err := tensor.FromContents(o.Name, tensor.Datatype(o.Datatype), o.Shape, o.Contents)
		if err != nil {
			return
		}
		b, err := tensor.EncodeRaw(t)
		if err != nil {
			return
		}
		raw = append(raw, b)
	}
	for _, o := range r.Outputs {
		o.Contents = nil
	}
	r.RawOutputContents = raw
}

// modelName is the model a core RPC request names, or "".
func modelName(req any) string {
	switch r := req.(type) {
	case *pb.ModelInferRequest:
		return r.GetModelName()
	case interface{ GetName() string }:
		return r.GetName()
	}
	return ""
}
