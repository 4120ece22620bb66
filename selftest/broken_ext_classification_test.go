package selftest

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers whose classification extension is broken in one way each. The
// extension has no RPC of its own: ModelInfer already passes through.

func init() { breakages = append(breakages, classificationBreakages...) }

func isClassifierInfer(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == "/v2/models/classifier/infer"
}

// eachClassString edits the result strings of a classifier answer.
func eachClassString(a *answer, edit func(data []any) []any) {
	editJSON(a, func(m map[string]any) {
		for _, o := range outputs(m) {
			if d, ok := o["data"].([]any); ok {
				o["data"] = edit(d)
			}
		}
	})
}

var labelSuffix = regexp.MustCompile(`:[^:]*$`)

var classificationBreakages = []breakage{
	{
		name: "rest-cls-500-for-string-count",
		rest: fault500(func(r *http.Request, b string) bool {
			return isClassifierInfer(r) && strings.Contains(b, `"classification":"two"`)
		}),
		failed: []string{"OIP-EXT-CLS-002"},
	},
	{
		name: "grpc-cls-internal-for-string-count",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok && r.GetModelName() == "classifier" {
				for _, o := range r.GetOutputs() {
					if o.GetParameters()["classification"].GetStringParam() != "" {
						return nil, status.Error(codes.Internal, "classification: invalid literal for int()")
					}
				}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-CLS-002"},
	},
	{
		name: "rest-cls-ascending",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isClassifierInfer(r) && a.status == 200 {
				eachClassString(a, func(d []any) []any { slices.Reverse(d); return d })
			}
		}},
		failed: []string{"OIP-EXT-CLS-004"},
	},
	{
		name: "rest-cls-no-labels",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isClassifierInfer(r) && a.status == 200 {
				eachClassString(a, func(d []any) []any {
					for i, s := range d {
						if str, ok := s.(string); ok && strings.Count(str, ":") == 2 {
							d[i] = labelSuffix.ReplaceAllString(str, "")
						}
					}
					return d
				})
			}
		}},
		failed: []string{"OIP-EXT-CLS-005"},
	},
	{
		name: "rest-cls-shape-of-the-scores",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isClassifierInfer(r) && a.status == 200 {
				editJSON(a, func(m map[string]any) {
					for _, o := range outputs(m) {
						o["shape"] = []any{2, 1}
					}
				})
			}
		}},
		failed: []string{"OIP-EXT-CLS-003"},
	},
	{
		name: "grpc-cls-index-off-by-one",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if r, ok := resp.(*pb.ModelInferResponse); ok && err == nil && r.GetModelName() == "classifier" {
				for _, o := range r.GetOutputs() {
					for i, s := range o.GetContents().GetBytesContents() {
						parts := strings.Split(string(s), ":")
						if len(parts) >= 2 && len(parts[1]) == 1 {
							parts[1] = string(parts[1][0] + 1)
						}
						o.Contents.BytesContents[i] = []byte(strings.Join(parts, ":"))
					}
				}
			}
			return resp, err
		},
		failed: []string{"OIP-EXT-CLS-004"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-EXT-CLS-005"},
	},
	{
		// Classes asked for into a shared memory region come back in the
		// response instead of being refused (Triton refuses them).
		name: "rest-cls-into-shm-answered",
		rest: &restHook{in: func(r *http.Request) {
			editInferRequest(r, func(m map[string]any) {
				for _, o := range tensorsOf(m, "outputs") {
					if p, _ := o["parameters"].(map[string]any); p["classification"] != nil && inSHM(o) {
						dropSHMParams(p)
					}
				}
			})
		}},
		warned: []string{"OIP-EXT-CLS-007"},
	},
	{
		name: "grpc-cls-into-shm-answered",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok {
				for _, o := range r.GetOutputs() {
					if p := o.GetParameters(); p["classification"] != nil && p["shared_memory_region"] != nil {
						for k := range p {
							if strings.HasPrefix(k, "shared_memory_") {
								delete(p, k)
							}
						}
					}
				}
			}
			return h(ctx, req)
		},
		warned: []string{"OIP-EXT-CLS-007"},
	},
}

// dropSHMParams removes the shared memory parameters of a tensor.
func dropSHMParams(p map[string]any) {
	for k := range p {
		if strings.HasPrefix(k, "shared_memory_") {
			delete(p, k)
		}
	}
}
