package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Versions add_sub does not have, JSON nesting and body limits, and
// parameters carried back with another type.

func init() { breakages = append(breakages, limitBreakages...) }

// largeBody is larger than any request the suite sends but the limit
// specs' 65 MiB ones.
const largeBody = 32 << 20

var limitBreakages = []breakage{
	{
		// A runtime that looks models up by name alone: any version of
		// add_sub runs the default one.
		name: "add-sub-serves-unknown-versions",
		rest: &restHook{in: func(r *http.Request) {
			rest, ok := strings.CutPrefix(r.URL.Path, "/v2/models/add_sub/versions/")
			if !ok {
				return
			}
			v, suffix, _ := strings.Cut(rest, "/")
			if v != "1" && (suffix == "" || suffix == "ready" || suffix == "infer") {
				r.URL.Path = strings.TrimSuffix("/v2/models/add_sub/"+suffix, "/")
				r.URL.RawPath = ""
			}
		}},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			switch r := req.(type) {
			case *pb.ModelInferRequest:
				if r.ModelName == "add_sub" && r.ModelVersion != "1" {
					r.ModelVersion = ""
				}
			case *pb.ModelMetadataRequest:
				if r.Name == "add_sub" && r.Version != "1" {
					r.Version = ""
				}
			case *pb.ModelReadyRequest:
				if r.Name == "add_sub" && r.Version != "1" {
					r.Version = ""
				}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-REST-INFER-002", "OIP-REST-HEALTH-009", "OIP-GRPC-INFER-002", "OIP-GRPC-HEALTH-004"},
		warned: []string{"OIP-REST-MMETA-013", "OIP-GRPC-META-006"},
	},
	{
		// Python's json module: RecursionError, answered 500.
		name: "rest-500-for-deep-nesting",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if !isInfer(r) || !bytes.Contains(requestBody(r), bytes.Repeat([]byte("["), 1000)) {
				return false
			}
			jsonError(w, http.StatusInternalServerError, `{"error":"maximum recursion depth exceeded while decoding a JSON array"}`)
			return true
		}},
		failed: []string{"OIP-REST-ERR-003"},
	},
	{
		// A worker that dies on the document (a C++ JSON reader
		// recursing per level): the connection closes with no answer; here
		// the server stays live, so only the unanswered request fails.
		name: "rest-hangs-up-on-deep-nesting",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if !isInfer(r) || !bytes.Contains(requestBody(r), bytes.Repeat([]byte("["), 1000)) {
				return false
			}
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				conn.Close()
			}
			return true
		}},
		failed: []string{"OIP-REST-ERR-007"},
	},
	{
		name: "rest-500-for-huge-body",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if !isInfer(r) || r.ContentLength <= largeBody {
				return false
			}
			// Read whole, so the client sees the answer rather than a
			// connection closed under its upload.
			io.Copy(io.Discard, r.Body)
			jsonError(w, http.StatusInternalServerError, `{"error":"out of memory"}`)
			return true
		}},
		failed: []string{"OIP-REST-ERR-003"},
	},
	{
		name: "rest-echoes-bool-param-as-string",
		rest: &restHook{
			in: func(r *http.Request) {
				if !isInfer(r) || !strings.HasPrefix(r.URL.Path, "/v2/models/add_sub/") {
					return
				}
				var m struct {
					Parameters map[string]any `json:"parameters"`
				}
				if json.Unmarshal(requestBody(r), &m) != nil {
					return
				}
				bools := map[string]string{}
				for k, v := range m.Parameters {
					if b, ok := v.(bool); ok {
						bools[k] = strconv.FormatBool(b)
					}
				}
				if len(bools) > 0 {
					enc, _ := json.Marshal(bools)
					r.Header.Set("X-Selftest-Bools", string(enc))
				}
			},
			out: func(r *http.Request, a *answer) {
				var bools map[string]string
				if a.status != http.StatusOK || json.Unmarshal([]byte(r.Header.Get("X-Selftest-Bools")), &bools) != nil {
					return
				}
				editJSON(a, func(m map[string]any) {
					params, _ := m["parameters"].(map[string]any)
					if params == nil {
						params = map[string]any{}
					}
					for k, v := range bools {
						params[k] = v
					}
					m["parameters"] = params
				})
			}},
		// A difference stock clients tolerate (implied).
		warned: []string{"OIP-REST-PARAM-004"},
	},
	{
		name: "grpc-echoes-bool-param-as-string",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			r, isInfer := req.(*pb.ModelInferRequest)
			out, ok := resp.(*pb.ModelInferResponse)
			if err != nil || !isInfer || !ok || r.ModelName != "add_sub" {
				return resp, err
			}
			for k, p := range r.Parameters {
				if b, isBool := p.GetParameterChoice().(*pb.InferParameter_BoolParam); isBool {
					if out.Parameters == nil {
						out.Parameters = map[string]*pb.InferParameter{}
					}
					out.Parameters[k] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: strconv.FormatBool(b.BoolParam)}}
				}
			}
			return out, nil
		},
		warned: []string{"OIP-GRPC-PARAM-004"},
	},
	{
		// Takes the message in, then fails on it as a server fault.
		name:     "grpc-internal-for-huge-message",
		grpcOpts: []grpc.ServerOption{grpc.MaxRecvMsgSize(128 << 20)},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok && proto.Size(r) > largeBody {
				return nil, status.Error(codes.Internal, "out of memory")
			}
			return h(ctx, req)
		},
		// Refused, with the code the core warns about for bad input.
		warned: []string{"OIP-GRPC-ERR-002"},
	},
}
