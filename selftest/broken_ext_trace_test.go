package selftest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"google.golang.org/grpc"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers whose trace extension is broken in one way each.

func init() { breakages = append(breakages, traceBreakages...) }

// TraceSetting is the trace extension, which the reference server
// advertises.
func (f forward) TraceSetting(ctx context.Context, r *pb.TraceSettingRequest) (*pb.TraceSettingResponse, error) {
	return f.up.TraceSetting(ctx, r)
}

func isTraceSetting(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/trace/setting") }

func isModelTraceSetting(r *http.Request) bool {
	return isTraceSetting(r) && strings.HasPrefix(r.URL.Path, "/v2/models/")
}

// dropTraceUpdate turns a POST on a trace route (model routes only, when
// modelOnly) whose body contains what into an empty update.
func dropTraceUpdate(what string, modelOnly bool) func(r *http.Request) {
	return func(r *http.Request) {
		if !isTraceSetting(r) || r.Method != http.MethodPost || modelOnly && !isModelTraceSetting(r) {
			return
		}
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(what)) {
			b = []byte("{}")
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
}

var traceBreakages = []breakage{
	{
		name:   "rest-trace-500-for-not-json",
		rest:   fault500(func(r *http.Request, b string) bool { return post(r, "/v2/trace/setting", b, `{"trace_rate":`) }),
		failed: []string{"OIP-EXT-TRACE-005"},
	},
	{
		name: "rest-trace-unknown-model-500",
		rest: fault500(func(r *http.Request, _ string) bool {
			return r.Method == http.MethodGet && r.URL.Path == "/v2/models/does_not_exist/trace/setting"
		}),
		failed: []string{"OIP-EXT-TRACE-005"},
	},
	{
		name: "rest-trace-model-level-is-a-string",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isModelTraceSetting(r) && r.Method == http.MethodGet && a.status == 200 {
				editJSON(a, func(m map[string]any) { m["trace_level"] = "OFF" })
			}
		}},
		// One defect, one failure: the schema grades the body under
		// OIP-EXT-TRACE-002; the model spec (TRACE-004) reads the model's
		// settings first and checks nothing of a body it refuses.
		failed: []string{"OIP-EXT-TRACE-002"},
	},
	{
		name:   "rest-trace-model-null-ignored",
		rest:   &restHook{in: dropTraceUpdate("null", true)},
		failed: []string{"OIP-EXT-TRACE-004"},
	},
	{
		name: "rest-trace-post-resets-count",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2/trace/setting" && r.Method == http.MethodPost && a.status == 200 {
				editJSON(a, func(m map[string]any) { m["trace_count"] = "12345" })
			}
		}},
		failed: []string{"OIP-EXT-TRACE-003"},
	},
	{
		// The error route's soft test warns; the 200 that claims an update
		// it did not make fails the update rule (ext_settings.go).
		name:   "rest-trace-bogus-level-accepted",
		rest:   &restHook{in: dropTraceUpdate("BOGUS", false)},
		warned: []string{"OIP-EXT-TRACE-005"},
		failed: []string{"OIP-EXT-TRACE-003"},
	},
	{
		name: "grpc-trace-model-clear-ignored",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.TraceSettingRequest); ok && r.GetModelName() != "" {
				for _, v := range r.GetSettings() {
					if len(v.GetValue()) == 0 {
						req = &pb.TraceSettingRequest{ModelName: r.GetModelName()}
					}
				}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-TRACE-006"},
	},
}
