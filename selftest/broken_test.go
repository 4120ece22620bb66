package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// breakages are the broken servers. Each breaks one rule of the catalog;
// failed lists the requirements whose checks legitimately depend on it.
var breakages = []breakage{
	{
		name: "rest-drop-id-echo",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 200 {
				editJSON(a, func(m map[string]any) { delete(m, "id") })
			}
		}},
		failed: []string{"OIP-REST-INFER-006", "OIP-REST-RESP-004"},
	},
	{
		name: "rest-422-detail-errors",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status >= 400 {
				a.status = 422
				a.body = []byte(`{"detail":[{"msg":"validation error"}]}`)
			}
		}},
		failed: []string{"OIP-REST-ERR-001"},
		warned: []string{"OIP-REST-ERR-003", "OIP-REST-ERR-006"},
	},
	{
		name: "rest-500-for-bad-input",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 400 {
				a.status = 500
			}
		}},
		failed: []string{"OIP-REST-INFER-004", "OIP-REST-INFER-005", "OIP-REST-INFER-009", "OIP-REST-INFER-010",
			"OIP-REST-INFER-019", "OIP-EXT-BIN-009"},
		warned: []string{"OIP-REST-INFER-014", "OIP-REST-INFER-021", "OIP-REST-INFER-024"},
	},
	{
		name: "rest-200-for-unknown-model-metadata",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.Method == http.MethodGet && r.URL.Path == "/v2/models/does_not_exist" {
				a.status = 200
				a.body = []byte(`{"name":"does_not_exist","platform":"","inputs":[],"outputs":[]}`)
			}
		}},
		// ERR-002 is about the body of a failure; a 200 is no failure.
		failed: []string{"OIP-REST-MMETA-012"},
	},
	{
		name: "rest-model-name-missing",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 200 {
				editJSON(a, func(m map[string]any) { delete(m, "model_name") })
			}
		}},
		failed: []string{"OIP-REST-RESP-002"},
	},
	{
		name: "rest-reversed-output-data",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 200 {
				editJSON(a, func(m map[string]any) {
					for _, o := range outputs(m) {
						if d, ok := o["data"].([]any); ok {
							slices.Reverse(d)
						}
					}
				})
			}
		}},
		// Every requirement that checks JSON output values fails.
		failed: []string{"OIP-REST-INFER-001", "OIP-REST-INFER-013", "OIP-REST-INFER-016", "OIP-REST-INFER-017",
			"OIP-REST-RESP-010", "OIP-REST-RESP-011", "OIP-REST-DATA-001", "OIP-REST-DATA-002", "OIP-REST-DATA-003",
			"OIP-EXT-BIN-002", "OIP-EXT-BIN-005", "OIP-EXT-BIN-007", "OIP-EXT-BIN-008"},
		warned: []string{"OIP-REST-DATA-007", "OIP-REST-DATA-008", "OIP-REST-PARAM-003", "OIP-EXT-BIN-015"},
	},
	{
		name: "rest-drop-output-when-all-requested",
		rest: &restHook{
			in: markOutputsRequested,
			out: func(r *http.Request, a *answer) {
				if isInfer(r) && a.status == 200 && r.Header.Get("X-Selftest-Outputs") == "" {
					editJSON(a, func(m map[string]any) {
						var keep []any
						for _, o := range outputs(m) {
							if o["name"] != "OUTPUT1" {
								keep = append(keep, o)
							}
						}
						m["outputs"] = keep
					})
				}
			}},
		failed: []string{"OIP-REST-INFER-001", "OIP-REST-INFER-013", "OIP-REST-INFER-016", "OIP-REST-RESP-010",
			"OIP-EXT-BIN-005"},
		warned: []string{"OIP-EXT-BIN-015"},
	},
	{
		name: "rest-health-live-500",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2/health/live" {
				a.status = 500
			}
		}},
		failed: []string{"OIP-REST-HEALTH-001"},
		warned: []string{"OIP-REST-HEALTH-014"},
	},
	{
		name: "rest-metadata-without-extensions",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2" {
				editJSON(a, func(m map[string]any) { delete(m, "extensions") })
			}
		}},
		failed: []string{"OIP-REST-SMETA-002", "OIP-GEN-004"},
	},
	{
		name: "rest-metadata-wrong-dim",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2/models/add_sub" {
				editJSON(a, func(m map[string]any) {
					in, _ := m["inputs"].([]any)
					if len(in) > 0 {
						in[0].(map[string]any)["shape"] = []any{-1, 15}
					}
				})
			}
		}},
		failed: []string{"OIP-REST-MMETA-005"},
	},
	{
		name: "rest-model-ready-for-unknown-model",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2/models/does_not_exist/ready" {
				a.status, a.body = 200, nil
			}
		}},
		failed: []string{"OIP-REST-HEALTH-010", "OIP-REST-HEALTH-003"},
	},
	{
		name: "rest-ignores-version",
		rest: &restHook{in: func(r *http.Request) {
			if i := strings.Index(r.URL.Path, "/versions/"); i >= 0 {
				rest := r.URL.Path[i+len("/versions/"):]
				if j := strings.IndexByte(rest, '/'); j >= 0 {
					r.URL.Path = r.URL.Path[:i] + rest[j:]
				} else {
					r.URL.Path = r.URL.Path[:i]
				}
				r.URL.RawPath = ""
			}
		}},
		failed: []string{"OIP-REST-INFER-002", "OIP-REST-HEALTH-009"},
		warned: []string{"OIP-REST-MMETA-013"},
	},
	{
		name: "rest-binary-header-length-plus-one",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if v := a.header.Get("Inference-Header-Content-Length"); v != "" {
				n, _ := strconv.Atoi(v)
				a.header.Set("Inference-Header-Content-Length", strconv.Itoa(n+1))
			}
		}},
		failed: []string{"OIP-EXT-BIN-009"},
	},
	{
		name: "rest-binary-header-missing",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			a.header.Del("Inference-Header-Content-Length")
		}},
		failed: []string{"OIP-EXT-BIN-009"},
	},
	{
		name: "rest-binary-outputs-also-carry-data",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if a.header.Get("Inference-Header-Content-Length") == "" {
				return
			}
			editJSON(a, func(m map[string]any) {
				for _, o := range outputs(m) {
					if p, ok := o["parameters"].(map[string]any); ok && p["binary_data_size"] != nil {
						o["data"] = []any{}
					}
				}
			})
		}},
		failed: []string{"OIP-EXT-BIN-007", "OIP-EXT-BIN-008"},
		warned: []string{"OIP-EXT-BIN-012"},
	},
	{
		name: "grpc-empty-ok-for-bad-input",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if _, ok := req.(*pb.ModelInferRequest); ok && status.Code(err) == codes.InvalidArgument {
				// Report the failure in-band: OK with an empty response.
				return &pb.ModelInferResponse{}, nil
			}
			return resp, err
		},
		failed: []string{"OIP-GRPC-SVC-002", "OIP-GRPC-INFER-007", "OIP-GRPC-INFER-008",
			"OIP-GRPC-INFER-009", "OIP-GRPC-RAW-002", "OIP-GRPC-RAW-003"},
		warned: []string{"OIP-GRPC-INFER-013", "OIP-GRPC-RAW-008"},
	},
	{
		name: "grpc-model-metadata-ok-for-unknown-model",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelMetadataRequest); ok && r.Name == "does_not_exist" {
				return &pb.ModelMetadataResponse{Name: r.Name}, nil
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-META-004"},
	},
	{
		name: "grpc-model-ready-true-for-unknown-model",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelReadyRequest); ok && r.Name == "does_not_exist" {
				return &pb.ModelReadyResponse{Ready: true}, nil
			}
			return h(ctx, req)
		},
		// OIP-GRPC-HEALTH-005 is "implied" in the catalog: a warning.
		warned: []string{"OIP-GRPC-HEALTH-005"},
	},
	{
		name: "grpc-server-live-unimplemented",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if _, ok := req.(*pb.ServerLiveRequest); ok {
				return nil, status.Error(codes.Unimplemented, "method ServerLive not implemented")
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-HEALTH-001", "OIP-GRPC-SVC-001", "OIP-GEN-001"},
	},
	{
		name:   "grpc-drop-id-echo",
		grpc:   onInfer(func(req *pb.ModelInferRequest, resp *pb.ModelInferResponse) { resp.Id = "" }),
		failed: []string{"OIP-GRPC-INFER-003"},
	},
	{
		name: "grpc-raw-output-count-mismatch",
		grpc: onInfer(func(req *pb.ModelInferRequest, resp *pb.ModelInferResponse) {
			if len(resp.RawOutputContents) > 0 {
				resp.RawOutputContents = append(resp.RawOutputContents, []byte{})
			}
		}),
		failed: []string{"OIP-GRPC-RAW-007"},
	},
	{
		name: "grpc-accepts-mixed-raw-and-typed",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok && len(r.RawInputContents) > 0 && len(r.RawInputContents) < len(r.Inputs) {
				// Quietly make the mixed request all-raw instead of refusing it.
				var raw [][]byte
				for i, in := range r.Inputs {
					if in.Contents != nil {
						t, err := tensor.FromContents(in.Name, tensor.Datatype(in.Datatype), in.Shape, in.Contents)
						if err != nil {
							return h(ctx, req)
						}
						b, _ := tensor.EncodeRaw(t)
						raw = append(raw, b)
						in.Contents = nil
					} else if len(r.RawInputContents) > 0 {
						raw = append(raw, r.RawInputContents[0])
						r.RawInputContents = r.RawInputContents[1:]
					}
					_ = i
				}
				r.RawInputContents = raw
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-RAW-002"},
	},
	{
		name: "grpc-pads-typed-contents",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok {
				for _, in := range r.Inputs {
					c := in.GetContents()
					n, err := tensor.ElementCount(in.Shape)
					if c == nil || err != nil || len(c.IntContents) == 0 || in.Datatype != "INT32" {
						continue
					}
					for int64(len(c.IntContents)) < n {
						c.IntContents = append(c.IntContents, 0)
					}
					c.IntContents = c.IntContents[:n]
				}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-INFER-008"},
	},
	{
		name: "grpc-int32-output-in-int64-contents",
		grpc: onInfer(func(req *pb.ModelInferRequest, resp *pb.ModelInferResponse) {
			for _, o := range resp.Outputs {
				if c := o.GetContents(); c != nil && o.Datatype == "INT32" {
					for _, v := range c.IntContents {
						c.Int64Contents = append(c.Int64Contents, int64(v))
					}
					c.IntContents = nil
				}
			}
		}),
		// Every requirement that decodes INT32 typed outputs fails.
		failed: []string{"OIP-GRPC-INFER-001", "OIP-GRPC-INFER-002", "OIP-GRPC-INFER-005",
			"OIP-GRPC-INFER-009", "OIP-GRPC-INFER-010", "OIP-GRPC-INFER-014"},
		warned: []string{"OIP-GRPC-INFER-006", "OIP-GRPC-PARAM-002"},
	},
}

// onInfer returns an interceptor that edits successful ModelInfer responses.
func onInfer(edit func(*pb.ModelInferRequest, *pb.ModelInferResponse)) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if r, ok := resp.(*pb.ModelInferResponse); ok && err == nil {
			edit(req.(*pb.ModelInferRequest), r)
		}
		return resp, err
	}
}

// markOutputsRequested tags an inference request whose body lists outputs,
// so that the response rewrite can tell.
func markOutputsRequested(r *http.Request) {
	if !isInfer(r) || r.Body == nil {
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	hl := len(body)
	if v := r.Header.Get("Inference-Header-Content-Length"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n <= len(body) {
			hl = n
		}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body[:hl], &m) == nil && m["outputs"] != nil {
		r.Header.Set("X-Selftest-Outputs", "1")
	}
}

// TestBrokenServers runs the suite against each broken server and checks
// that exactly the broken requirements failed.
func TestBrokenServers(t *testing.T) {
	for _, b := range breakages {
		t.Run(b.name, func(t *testing.T) {
			httpURL, grpcAddr := brokenServer(t, b)
			run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
			if run.report == nil {
				t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
			}
			got := run.report.WithStatus("failed")
			want := slices.Clone(b.failed)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("failed requirements:\n got  %v\n want %v\n%s", got, want, failureLines(run.output))
			}
			warned := run.report.WithStatus("warning")
			for _, id := range b.warned {
				if !slices.Contains(warned, id) && !slices.Contains(got, id) {
					t.Errorf("%s is neither failed nor a warning (warnings: %v)", id, warned)
				}
			}
			wantExit := 0
			if len(b.failed) > 0 {
				wantExit = 1
			}
			if run.exit != wantExit {
				t.Errorf("exit %d, want %d", run.exit, wantExit)
			}
		})
	}
}

// failureLines keeps the summary lines of a conform run's output.
func failureLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "FAIL ") || strings.HasPrefix(strings.TrimSpace(l), "WARN ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestServerStopsAnswering: a server that dies in the middle of the run (on
// the malformed-JSON spec) ends the run within seconds with exit status 2,
// an incomplete report, and a message saying it stopped answering.
func TestServerStopsAnswering(t *testing.T) {
	var stop func()
	b := breakage{name: "dies-on-malformed-json", rest: &restHook{in: func(r *http.Request) {
		if !isInfer(r) || r.Body == nil {
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if string(body) == `{"inputs": [` {
			go stop()
			panic(http.ErrAbortHandler) // drop this connection too
		}
	}}}
	httpURL, grpcAddr, stopFn := brokenServerStoppable(t, b)
	stop = stopFn
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr, "--timeout", "2s")
	t.Logf("oipkit conform output:\n%s", run.output)
	if run.exit != 2 {
		t.Errorf("exit %d, want 2\n%s", run.exit, run.output)
	}
	if run.elapsed > 30*time.Second {
		t.Errorf("took %v; a dead server must end the run quickly", run.elapsed)
	}
	if run.report == nil || !run.report.Incomplete || !strings.Contains(run.report.Problem, "stopped answering") {
		t.Errorf("report does not say the run is incomplete because the server stopped answering: %+v\n%s", run.report, run.output)
	}
}
