package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers whose model repository extension is broken in one way each.

func init() { breakages = append(breakages, repositoryBreakages...) }

// The model repository RPCs, which the reference server advertises.
func (f forward) RepositoryIndex(ctx context.Context, r *pb.RepositoryIndexRequest) (*pb.RepositoryIndexResponse, error) {
	return f.up.RepositoryIndex(ctx, r)
}
func (f forward) RepositoryModelLoad(ctx context.Context, r *pb.RepositoryModelLoadRequest) (*pb.RepositoryModelLoadResponse, error) {
	return f.up.RepositoryModelLoad(ctx, r)
}
func (f forward) RepositoryModelUnload(ctx context.Context, r *pb.RepositoryModelUnloadRequest) (*pb.RepositoryModelUnloadResponse, error) {
	return f.up.RepositoryModelUnload(ctx, r)
}

// answerOK answers 200 {} without passing the request on.
func answerOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}"))
}

var repositoryBreakages = []breakage{
	{
		name:   "rest-repo-index-500-for-not-json",
		rest:   fault500(func(r *http.Request, b string) bool { return post(r, "/v2/repository/index", b, `{"ready":`) }),
		failed: []string{"OIP-EXT-REPO-006"},
	},
	{
		name: "rest-repo-load-500-for-not-json",
		rest: fault500(func(r *http.Request, b string) bool {
			return post(r, "/v2/repository/models/repo_target/load", b, `{"parameters":`)
		}),
		failed: []string{"OIP-EXT-REPO-009"},
	},
	{
		name: "rest-repo-load-500-for-string-parameters",
		rest: fault500(func(r *http.Request, b string) bool {
			return post(r, "/v2/repository/models/repo_target/load", b, `{"parameters":"config"}`)
		}),
		failed: []string{"OIP-EXT-REPO-009"},
	},
	{
		name: "rest-repo-unload-unknown-500",
		rest: fault500(func(r *http.Request, b string) bool {
			return post(r, "/v2/repository/models/does_not_exist/unload", b, "")
		}),
		failed: []string{"OIP-EXT-REPO-012"},
	},
	{
		// Triton's: unloading a model that is not loaded is a no-op
		// answered 200; the extension leaves it open, so a warning.
		name: "rest-repo-unload-unknown-200",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if !post(r, "/v2/repository/models/does_not_exist/unload", string(requestBody(r)), "") {
				return false
			}
			answerOK(w)
			return true
		}},
		warned: []string{"OIP-EXT-REPO-012"},
	},
	{
		// MLServer's load reads no body: a malformed one loads anyway.
		name: "rest-repo-load-ignores-its-body",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			b := string(requestBody(r))
			if !post(r, "/v2/repository/models/repo_target/load", b, `{"parameters":`) && !post(r, "/v2/repository/models/repo_target/load", b, `{"parameters":"config"}`) {
				return false
			}
			answerOK(w)
			return true
		}},
		warned: []string{"OIP-EXT-REPO-009"},
	},
	{
		name: "grpc-repo-unload-unknown-unknown-code",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.RepositoryModelUnloadRequest); ok && r.GetModelName() == "does_not_exist" {
				return nil, status.Error(codes.Unknown, "Exception calling application")
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-REPO-013"},
	},
	{
		name: "rest-repo-index-503-html-for-malformed",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/repository/index" && string(requestBody(r)) == `{"ready":"yes"}` {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(503)
				w.Write([]byte("<html><body>503 Service Unavailable</body></html>"))
				return true
			}
			return false
		}},
		// One defect, one failure: the 5xx fails the rule, and its HTML
		// body is not graded again.
		failed: []string{"OIP-EXT-REPO-006"},
	},
	{
		name: "grpc-repo-load-unknown-internal",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.RepositoryModelLoadRequest); ok && r.GetModelName() == "does_not_exist" {
				return nil, status.Error(codes.Internal, "failed to load 'does_not_exist'")
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-REPO-013"},
	},
	{
		name: "rest-repo-not-advertised",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2" {
				editJSON(a, func(m map[string]any) {
					exts, _ := m["extensions"].([]any)
					m["extensions"] = slices.DeleteFunc(exts, func(e any) bool {
						return e == "model_repository" || e == "model_repository(unload_dependents)"
					})
				})
			}
		}},
		// The probe still observes the extension, so its specs run.
		failed: []string{"OIP-EXT-REPO-001"},
	},
	{
		name: "rest-repo-index-ignores-ready",
		rest: &restHook{in: func(r *http.Request) {
			if r.URL.Path == "/v2/repository/index" {
				body := requestBody(r)
				var m map[string]any
				if json.Unmarshal(body, &m) == nil && m["ready"] == true {
					setBody(r, []byte("{}"))
				}
			}
		}},
		failed: []string{"OIP-EXT-REPO-004"},
	},
	{
		name: "rest-repo-index-accepts-bad-ready",
		rest: &restHook{in: func(r *http.Request) {
			if r.URL.Path == "/v2/repository/index" {
				var m map[string]any
				if json.Unmarshal(requestBody(r), &m) == nil {
					if _, isBool := m["ready"].(bool); !isBool && m["ready"] != nil {
						setBody(r, []byte("{}"))
					}
				}
			}
		}},
		// Accepting a malformed request breaks the rule on clients too: lenient.
		lenient: []string{"OIP-EXT-REPO-006"},
	},
	{
		name: "rest-repo-unload-does-nothing",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodPost && r.URL.Path == "/v2/repository/models/repo_target/unload" {
				answerOK(w)
				return true
			}
			return false
		}},
		// Every spec that unloads repo_target over REST sees it still
		// ready; the malformed unload's 200 is soft in the catalog.
		failed: []string{"OIP-EXT-REPO-010"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-EXT-REPO-011"},
		warned:  []string{"OIP-EXT-REPO-012"},
	},
	{
		name: "rest-repo-load-of-broken-succeeds",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodPost && r.URL.Path == "/v2/repository/models/broken/load" {
				answerOK(w)
				return true
			}
			return false
		}},
		// The failed load never reaches the server, so it stays ready:
		// the implied readiness rule warns.
		failed: []string{"OIP-EXT-REPO-009"},
		warned: []string{"OIP-REST-HEALTH-006"},
	},
	{
		name: "grpc-repo-load-does-nothing",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if _, ok := req.(*pb.RepositoryModelLoadRequest); ok {
				return &pb.RepositoryModelLoadResponse{}, nil
			}
			return h(ctx, req)
		},
		// repo_target stays unloaded after the gRPC load (the spec's
		// cleanup loads it again over REST); broken "loads".
		failed: []string{"OIP-EXT-REPO-013"},
		warned: []string{"OIP-GRPC-HEALTH-003"},
	},
}

// setBody replaces the body of a request about to be forwarded.
func setBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
}
