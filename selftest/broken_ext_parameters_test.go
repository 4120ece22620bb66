package selftest

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers whose parameters or schedule_policy extension is broken in one
// way each. Neither has an RPC of its own.

func init() { breakages = append(breakages, parameterBreakages...) }

// rewriteInferBody replaces old with new in the body of a REST inference
// request, and marks the request with header when it did.
func rewriteInferBody(old, new, header string) func(r *http.Request) {
	return func(r *http.Request) {
		if !isInfer(r) {
			return
		}
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(old)) {
			b = bytes.ReplaceAll(b, []byte(old), []byte(new))
			if header != "" {
				r.Header.Set(header, "1")
			}
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
}

var parameterBreakages = []breakage{
	{
		name: "rest-param-echo-loses-the-value",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2/models/param_echo/infer" && a.status == 200 {
				editJSON(a, func(m map[string]any) {
					for _, o := range outputs(m) {
						o["data"] = []any{""}
					}
				})
			}
		}},
		failed: []string{"OIP-EXT-PARAM-001"},
	},
	{
		name:    "rest-param-reserved-prefix-accepted",
		rest:    &restHook{in: rewriteInferBody(`"triton_oipkit_custom"`, `"oipkit_custom"`, "")},
		lenient: []string{"OIP-EXT-PARAM-002"},
	},
	{
		name: "rest-sched-priority-refused",
		rest: &restHook{
			in: rewriteInferBody(`"priority":1`, `"priority":1`, "X-Selftest-Priority"),
			out: func(r *http.Request, a *answer) {
				if r.Header.Get("X-Selftest-Priority") != "" {
					a.status, a.body = 400, []byte(`{"error":"priority is not supported"}`)
					a.header.Set("Content-Type", "application/json")
				}
			},
		},
		failed: []string{"OIP-EXT-SCHED-002"},
	},
	{
		name: "grpc-sched-timeout-refused",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok && r.GetParameters()["timeout"] != nil {
				return nil, status.Error(codes.InvalidArgument, "timeout is not supported")
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-SCHED-003"},
	},
}
