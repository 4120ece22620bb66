package selftest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/conformance/report"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
	"github.com/oipkit/oipkit/verdict"
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
		failed: []string{"OIP-REST-INFER-006"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-RESP-004"},
	},
	{
		name: "rest-422-detail-errors",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status >= 400 {
				a.status = 422
				a.body = []byte(`{"detail":[{"msg":"validation error"}]}`)
			}
		}},
		// OIP-EXT-REPO-010 asks for an error response from an inference
		// of an unloaded model.
		failed: []string{"OIP-REST-ERR-001", "OIP-EXT-REPO-010"},
		warned: []string{"OIP-REST-ERR-003", "OIP-REST-ERR-006"},
	},
	{
		name: "rest-500-for-bad-input",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 400 {
				a.status = 500
			}
		}},
		// A 5xx for a malformed request fails OIP-REST-ERR-003 whatever its
		// level; only a 500 for an element-count mismatch is tolerated.
		// A 500 with {"error"} is still the catalog's "error response", so
		// the violated requirement itself fails only where its test asks
		// for a 4xx (an empty body: OIP-REST-INFER-004; malformed JSON:
		// OIP-REST-INFER-024, implied).
		// The empty body's 500 (OIP-REST-INFER-004) is the same defect,
		// graded once under OIP-REST-ERR-003, as are deep nesting's and the
		// 65 MiB body's 400 turned 500 (OIP-REST-ERR-007 fails only a server
		// that does not answer or survive them). An extension's refusal
		// answered 500 fails that extension's requirement too: each
		// extension route is graded like inference (issue 24).
		failed: []string{"OIP-REST-ERR-003", "OIP-EXT-CLS-002", "OIP-EXT-CLS-004", "OIP-EXT-CLS-007", "OIP-EXT-PARAM-002",
			"OIP-EXT-SEQ-003", "OIP-EXT-SEQ-004", "OIP-EXT-SHM-002", "OIP-EXT-SHM-003", "OIP-EXT-SHM-005", "OIP-EXT-SHM-009", "OIP-EXT-SHM-015"},
		blocked: []string{"OIP-REST-INFER-004"},
		warned:  []string{"OIP-REST-INFER-014", "OIP-REST-INFER-024"},
		quiet:   []string{"OIP-REST-INFER-005", "OIP-REST-INFER-009", "OIP-REST-INFER-010", "OIP-REST-INFER-019", "OIP-EXT-BIN-009"},
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
		failed: []string{"OIP-EXT-BIN-005", "OIP-EXT-BIN-007", "OIP-EXT-BIN-008", "OIP-EXT-CLS-004", "OIP-EXT-SHM-002", "OIP-REST-DATA-003", "OIP-REST-INFER-001", "OIP-REST-INFER-013", "OIP-REST-INFER-017", "OIP-REST-PARAM-001", "OIP-REST-RESP-011"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-DATA-001", "OIP-REST-DATA-002", "OIP-REST-INFER-016", "OIP-REST-RESP-010"},
		warned:  []string{"OIP-REST-DATA-007", "OIP-REST-DATA-008", "OIP-REST-PARAM-003", "OIP-EXT-BIN-015"},
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
		failed: []string{"OIP-EXT-BIN-005", "OIP-EXT-SHM-002", "OIP-REST-INFER-001", "OIP-REST-INFER-013"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-INFER-016", "OIP-REST-RESP-010"},
		warned:  []string{"OIP-EXT-BIN-015"},
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
		name: "rest-server-metadata-503-html",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2" {
				a.status = 503
				a.header.Set("Content-Type", "text/html")
				a.body = []byte("<html><body>Service Unavailable</body></html>")
			}
		}},
		// One defect: everything read from GET /v2 (the extensions array,
		// OIP-GEN-004, and every advertised extension's "lists X") fails on
		// the 503 that fails OIP-REST-SMETA-001, so it is blocked by it.
		failed:  []string{"OIP-REST-SMETA-001"},
		blocked: with(listedReqs(false), "OIP-GEN-004", "OIP-REST-SMETA-002", "OIP-REST-SMETA-005"),
	},
	{
		name: "rest-metadata-without-extensions",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2" {
				editJSON(a, func(m map[string]any) { delete(m, "extensions") })
			}
		}},
		// Changed by design (probes): the extensions still work, so their
		// specs run, and the MUSTs that a supporting server lists them fail
		// on the GET /v2 that fails OIP-GEN-004: one defect, blocked by it.
		// An extension without a probe (schedule_policy: a server that
		// ignores priority and timeout answers the same) is not tested.
		failed:  []string{"OIP-GEN-004"},
		blocked: with(listedReqs(true), "OIP-REST-SMETA-002"),
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
		failed: []string{"OIP-REST-HEALTH-003"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-HEALTH-010"},
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
		failed: []string{"OIP-REST-INFER-002", "OIP-REST-HEALTH-009", "OIP-EXT-STAT-002"},
		warned: []string{"OIP-REST-MMETA-013"},
	},
	{
		// Not a breakage: a server that does not version models (no
		// "versions" in metadata) is not tested for version routing,
		// so nothing may fail.
		name: "metadata-without-versions",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if strings.HasPrefix(r.URL.Path, "/v2/models/versioned") && !isInfer(r) {
				editJSON(a, func(m map[string]any) { delete(m, "versions") })
			}
		}},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if m, ok := resp.(*pb.ModelMetadataResponse); ok && m != nil {
				m.Versions = nil
			}
			return resp, err
		},
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
		// Reporting a failure in-band breaks OIP-GRPC-SVC-002, a rule on
		// servers. Changed by design (finding classes): the rules the bad
		// requests break bind clients (the sender picks the contents field,
		// the element count, the raw buffers), so not refusing them is
		// lenient, no longer a failure.
		failed:  []string{"OIP-EXT-SHM-009", "OIP-EXT-SHM-015", "OIP-GRPC-SVC-002"},
		lenient: []string{"OIP-GRPC-INFER-007", "OIP-GRPC-INFER-008", "OIP-GRPC-INFER-009", "OIP-GRPC-RAW-002", "OIP-GRPC-RAW-003", "OIP-GRPC-RAW-008"},
		warned:  []string{"OIP-GRPC-INFER-013"},
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
		// OIP-GRPC-HEALTH-005 is "implied", but "never true" also
		// breaks the MUST that ModelReady reports the model's readiness.
		failed: []string{"OIP-GRPC-HEALTH-004"},
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
		// ServerLive's UNIMPLEMENTED is one defect: the service and
		// transport rules checked on that call are blocked by it.
		failed:  []string{"OIP-GRPC-HEALTH-001"},
		blocked: []string{"OIP-GRPC-SVC-001", "OIP-GEN-001"},
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
		// Changed by design (finding classes): OIP-GRPC-RAW-002 binds the
		// client that mixes the forms, so accepting the mix is lenient.
		lenient: []string{"OIP-GRPC-RAW-002"},
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
		// Changed by design (finding classes): the element count binds the
		// sender, so padding a short request instead of refusing it is
		// lenient.
		lenient: []string{"OIP-GRPC-INFER-008"},
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
		failed: []string{"OIP-EXT-SEQ-002", "OIP-GRPC-INFER-001", "OIP-GRPC-INFER-002", "OIP-GRPC-INFER-009", "OIP-GRPC-INFER-010", "OIP-GRPC-PARAM-001"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-GRPC-INFER-005", "OIP-GRPC-INFER-014"},
		warned:  []string{"OIP-GRPC-INFER-006", "OIP-GRPC-PARAM-002"},
	},
	{
		name: "rest-id-echoed-only-when-ascii",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 200 {
				editJSON(a, func(m map[string]any) {
					if id, ok := m["id"].(string); ok && !isASCII(id) {
						delete(m, "id")
					}
				})
			}
		}},
		failed: []string{"OIP-REST-INFER-006"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-RESP-004"},
	},
	{
		name: "grpc-id-truncated-to-256-bytes",
		grpc: onInfer(func(req *pb.ModelInferRequest, resp *pb.ModelInferResponse) {
			resp.Id = resp.Id[:min(len(resp.Id), 256)]
		}),
		failed: []string{"OIP-GRPC-INFER-003"},
	},
	{
		// Right values, right shape, wrong order: column-major [2,3].
		name: "rest-transposed-2x3-output",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 200 {
				editJSON(a, func(m map[string]any) {
					for _, o := range outputs(m) {
						d, ok := o["data"].([]any)
						if shape, _ := o["shape"].([]any); ok && len(d) == 6 && fmt.Sprint(shape) == "[2 3]" {
							o["data"] = []any{d[0], d[3], d[1], d[4], d[2], d[5]}
						}
					}
				})
			}
		}},
		failed: []string{"OIP-REST-DATA-003", "OIP-REST-RESP-011"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-DATA-001", "OIP-REST-DATA-002"},
		warned:  []string{"OIP-REST-DATA-006", "OIP-REST-DATA-007", "OIP-REST-DATA-008", "OIP-REST-DATA-010"},
	},
	{
		name: "grpc-big-endian-raw-outputs",
		grpc: onInfer(func(req *pb.ModelInferRequest, resp *pb.ModelInferResponse) {
			for i, o := range resp.Outputs {
				if i < len(resp.RawOutputContents) {
					resp.RawOutputContents[i] = bigEndian(tensor.Datatype(o.Datatype), resp.RawOutputContents[i])
				}
			}
		}),
		// Every raw output of more than one byte per element is unreadable;
		// typed contents are untouched.
		failed: []string{"OIP-GRPC-INFER-011", "OIP-GRPC-RAW-001", "OIP-GRPC-RAW-004"},
		warned: []string{"OIP-GRPC-RAW-005", "OIP-GRPC-RAW-006"},
	},
	{
		name: "grpc-raw-outputs-also-set-contents",
		grpc: onInfer(func(req *pb.ModelInferRequest, resp *pb.ModelInferResponse) {
			for i, o := range resp.Outputs {
				if i < len(resp.RawOutputContents) && o.Datatype == "INT32" {
					t, err := tensor.DecodeRaw(o.Name, tensor.Int32, o.Shape, resp.RawOutputContents[i])
					if err == nil {
						o.Contents, _ = tensor.ToContents(t)
					}
				}
			}
		}),
		failed: []string{"OIP-GRPC-RAW-007"},
	},
	{
		name: "grpc-server-ready-false",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if _, ok := req.(*pb.ServerReadyRequest); ok {
				return &pb.ServerReadyResponse{Ready: false}, nil
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-HEALTH-002"},
	},
	{
		name: "grpc-model-ready-false-for-loaded-model",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelReadyRequest); ok && r.Name == "add_sub" {
				return &pb.ModelReadyResponse{Ready: false}, nil
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-HEALTH-004"},
	},
	{
		name: "rest-error-member-is-a-number",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status >= 400 {
				a.body = []byte(`{"error":42}`)
			}
		}},
		failed: []string{"OIP-REST-ERR-001", "OIP-EXT-REPO-010"},
		warned: []string{"OIP-REST-ERR-004", "OIP-REST-ERR-006"},
	},
	{
		name: "rest-metadata-error-body-not-json",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v2/models/") && !strings.HasSuffix(r.URL.Path, "/ready") && a.status >= 400 {
				a.header.Set("Content-Type", "text/html")
				a.body = []byte("<html><body>Not Found</body></html>")
			}
		}},
		// The hook covers /v2/models/{m}/config and /stats too:
		// OIP-EXT-CFG-003 and OIP-EXT-STAT-011 fail with it.
		failed: []string{"OIP-EXT-CFG-003", "OIP-EXT-STAT-011", "OIP-EXT-TRACE-005", "OIP-REST-MMETA-012"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-ERR-002"},
		warned:  []string{"OIP-REST-MMETA-013"},
	},
	{
		name: "rest-binary-header-length-inside-json",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if v := a.header.Get("Inference-Header-Content-Length"); v != "" {
				n, _ := strconv.Atoi(v)
				a.header.Set("Inference-Header-Content-Length", strconv.Itoa(n-5))
			}
		}},
		failed: []string{"OIP-EXT-BIN-009"},
	},
	{
		name: "rest-binary-data-size-understated",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if a.header.Get("Inference-Header-Content-Length") == "" {
				return
			}
			editJSON(a, func(m map[string]any) {
				for _, o := range outputs(m) {
					if p, ok := o["parameters"].(map[string]any); ok {
						if v, ok := p["binary_data_size"].(json.Number); ok {
							if n, err := v.Int64(); err == nil && n >= 4 {
								p["binary_data_size"] = n - 4
							}
						}
					}
				}
			})
		}},
		// Every binary output is unreadable.
		failed: []string{"OIP-EXT-BIN-002", "OIP-EXT-BIN-003", "OIP-EXT-BIN-004", "OIP-EXT-BIN-006", "OIP-EXT-BIN-007", "OIP-EXT-BIN-008"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-EXT-BIN-009"},
		warned:  []string{"OIP-EXT-BIN-016"},
	},
	{
		// Not a failure: BOOL as JSON booleans is only implied (DATA-006).
		name: "rest-bool-output-as-numbers",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 200 {
				editJSON(a, func(m map[string]any) {
					for _, o := range outputs(m) {
						if d, ok := o["data"].([]any); ok && o["datatype"] == "BOOL" {
							for i, v := range d {
								if v == true {
									d[i] = 1
								} else {
									d[i] = 0
								}
							}
						}
					}
				})
			}
		}},
		warned: []string{"OIP-REST-DATA-006"},
	},
	{
		name: "rest-refuses-empty-parameters",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if isInfer(r) && bytes.Contains(requestBody(r), []byte(`"parameters":{}`)) {
				jsonError(w, 400, `{"error":"parameters must not be empty"}`)
				return true
			}
			return false
		}},
		failed: []string{"OIP-REST-PARAM-001"},
		warned: []string{"OIP-REST-INFER-008", "OIP-REST-INFER-015", "OIP-REST-PARAM-003"},
	},
	{
		// The server survives a malformed body but stops reporting live:
		// the liveness check after the negative spec must catch it.
		name: "rest-not-live-after-malformed-json",
		rest: func() *restHook {
			var pending atomic.Bool
			return &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
				if isInfer(r) && string(requestBody(r)) == `{"inputs": [` {
					pending.Store(true)
				}
				if r.URL.Path == "/v2/health/live" && pending.Swap(false) {
					jsonError(w, 503, `{"live":false}`)
					return true
				}
				return false
			}}
		}(),
		failed: []string{"OIP-REST-ERR-003"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-ERR-001", "OIP-REST-ERR-004", "OIP-REST-ERR-005", "OIP-REST-ERR-006", "OIP-REST-INFER-024"},
	},
	{
		name: "rest-500-for-unknown-model-ready",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2/models/does_not_exist/ready" {
				a.status = 500
			}
		}},
		failed: []string{"OIP-REST-HEALTH-003"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-REST-HEALTH-010"},
	},
	{
		name: "grpc-ignores-model-version",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok {
				r.ModelVersion = ""
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-INFER-002"},
	},
	{
		name: "grpc-drops-output1-when-all-requested",
		grpc: onInfer(func(req *pb.ModelInferRequest, resp *pb.ModelInferResponse) {
			if len(req.Outputs) > 0 || len(resp.Outputs) < 2 {
				return
			}
			resp.Outputs = resp.Outputs[:1]
			if len(resp.RawOutputContents) > 1 {
				resp.RawOutputContents = resp.RawOutputContents[:1]
			}
		}),
		failed: []string{"OIP-GRPC-INFER-001", "OIP-GRPC-RAW-001"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-GRPC-INFER-005", "OIP-GRPC-INFER-014"},
	},
	{
		name: "grpc-metadata-wrong-input-datatype",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if m, ok := resp.(*pb.ModelMetadataResponse); ok && m.GetName() == "add_sub" && len(m.Inputs) > 0 {
				m.Inputs[0].Datatype = "FP32"
			}
			return resp, err
		},
		failed: []string{"OIP-GRPC-META-002"},
	},
	{
		name: "rest-extensions-not-an-array",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2" {
				editJSON(a, func(m map[string]any) { m["extensions"] = "binary_tensor_data" })
			}
		}},
		// Features come from gRPC server metadata instead, so the extension
		// specs still run; REST metadata does not report the extensions
		// (every advertised extension's "lists X"), on the GET /v2 that
		// fails OIP-GEN-004: one defect, blocked by it.
		failed:  []string{"OIP-GEN-004"},
		blocked: with(listedReqs(false), "OIP-REST-SMETA-002"),
		warned:  []string{"OIP-REST-SMETA-004"},
	},
	{
		name: "rest-redirects-model-metadata",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && r.URL.Path == "/v2/models/add_sub" {
				http.Redirect(w, r, "/v2/models/add_sub/", http.StatusTemporaryRedirect)
				return true
			}
			return false
		}},
		failed:  []string{"OIP-REST-MMETA-001"},
		blocked: []string{"OIP-REST-MMETA-002", "OIP-REST-MMETA-005"},
		warned:  []string{"OIP-REST-MMETA-004", "OIP-REST-MMETA-006"},
	},
	{
		name: "rest-duplicate-output-names",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 200 && a.header.Get("Inference-Header-Content-Length") == "" {
				editJSON(a, func(m map[string]any) {
					if outs, _ := m["outputs"].([]any); len(outs) > 0 {
						// A second, wrong copy of the first output.
						dup := map[string]any{}
						for k, v := range outs[0].(map[string]any) {
							dup[k] = v
						}
						if d, ok := dup["data"].([]any); ok {
							dup["data"] = append([]any{}, d...)
							slices.Reverse(dup["data"].([]any))
						}
						m["outputs"] = append(outs, dup)
					}
				})
			}
		}},
		// Every check of JSON output values fails: which copy is the result?
		failed: []string{"OIP-EXT-BIN-005", "OIP-EXT-CLS-003", "OIP-EXT-PARAM-001", "OIP-EXT-SEQ-002", "OIP-EXT-SHM-002", "OIP-REST-DATA-003", "OIP-REST-INFER-001", "OIP-REST-INFER-002", "OIP-REST-INFER-013", "OIP-REST-INFER-017", "OIP-REST-PARAM-001", "OIP-REST-RESP-011"},
		// Failing only on exchanges a failed requirement above fails too:
		// one defect, blocked by it.
		blocked: []string{"OIP-EXT-CLS-002", "OIP-EXT-CLS-004", "OIP-EXT-CLS-005", "OIP-REST-DATA-001", "OIP-REST-DATA-002", "OIP-REST-INFER-016", "OIP-REST-RESP-010"},
		warned:  []string{"OIP-REST-DATA-006", "OIP-REST-DATA-007", "OIP-REST-PARAM-003", "OIP-EXT-BIN-015"},
	},
	{
		name: "rest-hangs-on-v2-trailing-slash",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/" {
				<-r.Context().Done() // until the client gives up
				return true
			}
			return false
		}},
		args: []string{"--timeout", "1s"},
		// The one spec that uses the route fails with a timeout; the run
		// goes on and every other spec passes.
		failed: []string{"OIP-REST-SMETA-007"},
	},
	{
		name: "rest-endless-body-on-model-metadata",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodGet || r.URL.Path != "/v2/models/identity_fp32" {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			chunk := bytes.Repeat([]byte(" "), 1<<20)
			w.Write([]byte("{"))
			for range 100 { // 100 MiB, chunked; the client stops at its limit
				if _, err := w.Write(chunk); err != nil {
					return true
				}
			}
			return true
		}},
		failed: []string{"OIP-REST-MMETA-007"},
	},
	{
		// Not a failure: A-21 asks to report, not grade, precision lost on
		// 64-bit integers beyond 2^53 in JSON (a float64 JSON stack).
		name: "rest-int64-json-through-float64",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == 200 {
				editJSON(a, func(m map[string]any) {
					for _, o := range outputs(m) {
						if d, ok := o["data"].([]any); ok && (o["datatype"] == "INT64" || o["datatype"] == "UINT64") {
							for i, v := range d {
								if n, ok := v.(json.Number); ok {
									f, _ := n.Float64()
									d[i] = json.Number(strconv.FormatFloat(f, 'f', -1, 64))
								}
							}
						}
					}
				})
			}
		}},
		quiet: []string{"OIP-REST-DATA-007"},
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
			run := conform(t, append([]string{"--http", httpURL, "--grpc", grpcAddr}, b.args...)...)
			if run.report == nil {
				t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
			}
			got := run.report.WithStatus("failed")
			want := slices.Clone(b.failed)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("failed requirements:\n got  %v\n want %v\n%s", got, want, failureLines(run.output))
			}
			blocked := run.report.WithStatus(report.StatusBlocked)
			wantBlocked := slices.Clone(b.blocked)
			slices.Sort(wantBlocked)
			if !slices.Equal(blocked, wantBlocked) {
				t.Errorf("blocked requirements:\n got  %v\n want %v", blocked, wantBlocked)
			}
			if err := run.report.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			warned := run.report.WithStatus("warning")
			for _, id := range b.warned {
				if !slices.Contains(warned, id) && !slices.Contains(got, id) {
					t.Errorf("%s is neither failed nor a warning (warnings: %v)", id, warned)
				}
			}
			lenient := run.report.WithStatus("lenient")
			for _, id := range b.lenient {
				if !slices.Contains(lenient, id) {
					t.Errorf("%s is not lenient (lenient: %v)", id, lenient)
				}
			}
			for _, id := range b.quiet {
				if slices.Contains(warned, id) || slices.Contains(got, id) || slices.Contains(lenient, id) {
					t.Errorf("%s was graded; the catalog only records this deviation", id)
				}
			}
			checkEvidence(t, run)
			if b.answered {
				for _, q := range run.report.Requirements {
					for _, f := range q.Findings {
						if strings.Contains(f.Message, "no answer") || strings.Contains(f.Message, "no usable answer") {
							t.Errorf("%s: %q; the server answered every request", q.ID, firstLine(f.Message))
						}
					}
				}
			}
			wantExit := 0
			if len(b.failed) > 0 {
				wantExit = 3
			}
			if run.exit != wantExit {
				t.Errorf("exit %d, want %d", run.exit, wantExit)
			}
		})
	}
}

// checkEvidence: every failure and warning in report.json carries what was
// sent and what came back, and report.md and report.html show it.
func checkEvidence(t *testing.T, run conformRun) {
	t.Helper()
	n := 0
	for _, q := range run.report.Requirements {
		for _, f := range q.Findings {
			n++
			ev := f.Evidence
			if ev == nil || ev.Request.Target == "" || ev.Response.Status == "" {
				t.Errorf("%s: finding %q has no request/response evidence: %+v", q.ID, firstLine(f.Message), ev)
			}
		}
	}
	if n == 0 {
		return
	}
	md, err := os.ReadFile(filepath.Join(run.dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(md), "\nSent:\n"); got != n {
		t.Errorf("report.md renders evidence for %d findings, report.json has %d", got, n)
	}
	page, err := os.ReadFile(filepath.Join(run.dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(page), `<div class="finding cl-`); got != n {
		t.Errorf("report.html shows %d findings, report.json has %d", got, n)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
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

// TestMissingFixtureIsPartial: a server without one fixture model gets a
// partial verdict (exit status 3), never a pass, and nothing fails.
func TestMissingFixtureIsPartial(t *testing.T) {
	all := []string{"OIP-REST-CORE", "OIP-GRPC-CORE", "OIP-REST-BINARY"}
	for _, c := range []struct {
		hidden  string
		skipped []string
		partial []string // profiles that must be partial; the others pass
	}{
		{"identity_int8", []string{"OIP-REST-DATA-007", "OIP-GRPC-INFER-009", "OIP-EXT-BIN-002"}, all},
		// The server versions its models (add_sub lists versions), so a
		// missing versioned fixture is a gap, not "not applicable".
		{"versioned", []string{"OIP-REST-INFER-002", "OIP-REST-MMETA-010", "OIP-REST-HEALTH-009"}, all[:2]},
	} {
		t.Run(c.hidden, func(t *testing.T) { testMissingFixture(t, c.hidden, c.skipped, c.partial) })
	}
}

func testMissingFixture(t *testing.T, hidden string, wantSkipped, partial []string) {
	b := breakage{
		name: "without-" + hidden,
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if strings.HasPrefix(r.URL.Path, "/v2/models/"+hidden) {
				a.status, a.body = 404, []byte(`{"error":"model not found"}`)
			}
		}},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			type named interface{ GetName() string }
			if n, ok := req.(named); ok && n.GetName() == hidden {
				return nil, status.Error(codes.NotFound, "model not found")
			}
			if r, ok := req.(*pb.ModelInferRequest); ok && r.ModelName == hidden {
				return nil, status.Error(codes.NotFound, "model not found")
			}
			return h(ctx, req)
		},
	}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.exit != 4 || run.report == nil {
		t.Fatalf("exit %d, want 4 (partial)\n%s", run.exit, run.output)
	}
	if failed := run.report.WithStatus("failed"); len(failed) > 0 {
		t.Errorf("failed requirements %v, want none", failed)
	}
	skipped := run.report.WithStatus("skipped")
	for _, id := range wantSkipped {
		if !slices.Contains(skipped, id) {
			t.Errorf("%s is not skipped (skipped: %v)", id, skipped)
		}
	}
	for _, p := range run.report.Profiles {
		want := verdict.Pass
		if slices.Contains(partial, p.Name) {
			want = verdict.Inconclusive
		}
		if p.Verdict != want {
			t.Errorf("profile %s: %s, want %s", p.Name, p.Verdict, want)
		}
	}
	if !strings.Contains(run.output, "fixture not deployed: "+hidden) {
		t.Errorf("output does not name the missing fixture:\n%s", run.output)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// bigEndian byte-swaps every element of a raw buffer of datatype d; BYTES
// get big-endian length prefixes.
func bigEndian(d tensor.Datatype, raw []byte) []byte {
	out := append([]byte(nil), raw...)
	if d == tensor.Bytes {
		for off := 0; off+4 <= len(out); {
			n := int(binary.LittleEndian.Uint32(out[off:]))
			slices.Reverse(out[off : off+4])
			off += 4 + n
		}
		return out
	}
	size := d.Size()
	for off := 0; size > 1 && off+size <= len(out); off += size {
		slices.Reverse(out[off : off+size])
	}
	return out
}
