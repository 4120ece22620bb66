package selftest

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"google.golang.org/grpc"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers whose logging extension is broken in one way each.

func init() { breakages = append(breakages, loggingBreakages...) }

// LogSettings is the logging extension, which the reference server
// advertises.
func (f forward) LogSettings(ctx context.Context, r *pb.LogSettingsRequest) (*pb.LogSettingsResponse, error) {
	return f.up.LogSettings(ctx, r)
}

func isLogging(r *http.Request) bool { return r.URL.Path == "/v2/logging" }

// dropLogUpdate turns a POST /v2/logging whose body contains what into an
// empty update, as a server that ignores that setting would take it.
func dropLogUpdate(what string) func(r *http.Request) {
	return func(r *http.Request) {
		if !isLogging(r) || r.Method != http.MethodPost {
			return
		}
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(what)) {
			b = []byte("{}")
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
}

var loggingBreakages = []breakage{
	{
		name:   "rest-log-500-for-not-json",
		rest:   fault500(func(r *http.Request, b string) bool { return post(r, "/v2/logging", b, `{"log_info":`) }),
		failed: []string{"OIP-EXT-LOG-006"},
	},
	{
		name: "rest-log-500-for-string-level",
		rest: fault500(func(r *http.Request, b string) bool {
			return post(r, "/v2/logging", b, `{"log_verbose_level": "loud"}`)
		}),
		failed: []string{"OIP-EXT-LOG-006"},
	},
	{
		name: "rest-log-post-answers-level-as-string",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isLogging(r) && r.Method == http.MethodPost && a.status == 200 {
				editJSON(a, func(m map[string]any) { m["log_verbose_level"] = "1" })
			}
		}},
		failed: []string{"OIP-EXT-LOG-003"},
	},
	{
		name: "rest-log-get-without-log-format",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isLogging(r) && r.Method == http.MethodGet && a.status == 200 {
				editJSON(a, func(m map[string]any) { delete(m, "log_format") })
			}
		}},
		// One defect, one failure: the schema grades the body under
		// OIP-EXT-LOG-002; the specs that read the settings first check
		// nothing of a body it refuses (and put nothing back).
		failed: []string{"OIP-EXT-LOG-002"},
	},
	{
		name:   "rest-log-file-accepted",
		rest:   &restHook{in: dropLogUpdate(`"log_file"`)},
		failed: []string{"OIP-EXT-LOG-004"},
	},
	{
		name:    "rest-log-negative-level-accepted",
		rest:    &restHook{in: dropLogUpdate(`-1`)},
		lenient: []string{"OIP-EXT-LOG-005"},
	},
	{
		// A refusal as a 5xx is the server's fault in an extension spec,
		// even under a rule that binds clients (accepting -1 is lenient).
		name: "rest-log-500-for-negative-level",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if isLogging(r) && r.Method == http.MethodPost && bytes.Contains(requestBody(r), []byte(`-1`)) {
				jsonError(w, 500, `{"error":"log_verbose_level: negative"}`)
				return true
			}
			return false
		}},
		failed: []string{"OIP-EXT-LOG-005"},
	},
	{
		name: "rest-log-503-html-for-log-file",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if isLogging(r) && r.Method == http.MethodPost && bytes.Contains(requestBody(r), []byte(`"log_file"`)) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(503)
				w.Write([]byte("<html><body>503 Service Unavailable</body></html>"))
				return true
			}
			return false
		}},
		failed: []string{"OIP-EXT-LOG-004"},
	},
	{
		name: "grpc-log-ignores-update",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if _, ok := req.(*pb.LogSettingsRequest); ok {
				req = &pb.LogSettingsRequest{}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-LOG-007"},
	},
}
