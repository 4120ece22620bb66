package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers whose system shared memory extension is broken in one way each.

func init() { breakages = append(breakages, sharedMemoryBreakages...) }

// The system shared memory RPCs, which the reference server implements,
// and the CUDA ones, which it answers "not supported".
func (f forward) SystemSharedMemoryStatus(ctx context.Context, r *pb.SystemSharedMemoryStatusRequest) (*pb.SystemSharedMemoryStatusResponse, error) {
	return f.up.SystemSharedMemoryStatus(ctx, r)
}

func (f forward) SystemSharedMemoryRegister(ctx context.Context, r *pb.SystemSharedMemoryRegisterRequest) (*pb.SystemSharedMemoryRegisterResponse, error) {
	return f.up.SystemSharedMemoryRegister(ctx, r)
}

func (f forward) SystemSharedMemoryUnregister(ctx context.Context, r *pb.SystemSharedMemoryUnregisterRequest) (*pb.SystemSharedMemoryUnregisterResponse, error) {
	return f.up.SystemSharedMemoryUnregister(ctx, r)
}

func (f forward) CudaSharedMemoryStatus(ctx context.Context, r *pb.CudaSharedMemoryStatusRequest) (*pb.CudaSharedMemoryStatusResponse, error) {
	return f.up.CudaSharedMemoryStatus(ctx, r)
}

func (f forward) CudaSharedMemoryRegister(ctx context.Context, r *pb.CudaSharedMemoryRegisterRequest) (*pb.CudaSharedMemoryRegisterResponse, error) {
	return f.up.CudaSharedMemoryRegister(ctx, r)
}

func (f forward) CudaSharedMemoryUnregister(ctx context.Context, r *pb.CudaSharedMemoryUnregisterRequest) (*pb.CudaSharedMemoryUnregisterResponse, error) {
	return f.up.CudaSharedMemoryUnregister(ctx, r)
}

// editInferRequest rewrites the JSON body of a REST inference request
// (bodies with a binary tail are left alone).
func editInferRequest(r *http.Request, edit func(m map[string]any)) {
	if !isInfer(r) || r.Header.Get("Inference-Header-Content-Length") != "" {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(requestBody(r)))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return
	}
	edit(m)
	body, _ := json.Marshal(m)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
}

// tensorsOf returns the objects of the list m[key] ("inputs", "outputs").
func tensorsOf(m map[string]any, key string) []map[string]any {
	var out []map[string]any
	list, _ := m[key].([]any)
	for _, t := range list {
		if tm, ok := t.(map[string]any); ok {
			out = append(out, tm)
		}
	}
	return out
}

func inSHM(t map[string]any) bool {
	p, _ := t["parameters"].(map[string]any)
	_, ok := p["shared_memory_region"]
	return ok
}

var sharedMemoryBreakages = []breakage{
	{
		name: "rest-shm-register-500-for-not-json",
		rest: fault500(func(r *http.Request, b string) bool {
			return strings.HasSuffix(r.URL.Path, "/register") && b == `{"key":`
		}),
		failed: []string{"OIP-EXT-SHM-012"},
	},
	{
		name: "rest-shm-register-500-for-wrong-types",
		rest: fault500(func(r *http.Request, b string) bool {
			return strings.HasSuffix(r.URL.Path, "/register") && strings.Contains(b, `"byte_size": "64"`)
		}),
		failed: []string{"OIP-EXT-SHM-012"},
	},
	{
		name: "rest-shm-not-advertised",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2" {
				editJSON(a, func(m map[string]any) {
					exts, _ := m["extensions"].([]any)
					m["extensions"] = slices.DeleteFunc(exts, func(e any) bool { return e == "system_shared_memory" })
				})
			}
		}},
		// The probe still observes the extension, so its specs run.
		failed: []string{"OIP-EXT-SHM-001"},
	},
	{
		name: "rest-shm-region-status-lists-all",
		rest: &restHook{in: func(r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v2/systemsharedmemory/region/") && strings.HasSuffix(r.URL.Path, "/status") {
				r.URL.Path, r.URL.RawPath = "/v2/systemsharedmemory/status", ""
			}
		}},
		// The status of an unknown region is a 200 list, not an error.
		failed: []string{"OIP-EXT-SHM-006", "OIP-EXT-SHM-012"},
	},
	{
		name: "rest-shm-unregister-ignored",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v2/systemsharedmemory/region/") && strings.HasSuffix(r.URL.Path, "/unregister") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				return true
			}
			return false
		}},
		failed: []string{"OIP-EXT-SHM-008", "OIP-EXT-SHM-009"},
	},
	{
		name: "rest-shm-register-never-fails",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if strings.HasSuffix(r.URL.Path, "/register") && a.status != http.StatusOK {
				a.status, a.body = http.StatusOK, nil
			}
		}},
		failed: []string{"OIP-EXT-SHM-012"},
		warned: []string{"OIP-EXT-SHM-010"},
	},
	registerIgnoresOffset,
	grpcRegisterIgnoresOffset,
	{
		name: "rest-shm-outputs-returned-as-data",
		rest: &restHook{in: func(r *http.Request) {
			editInferRequest(r, func(m map[string]any) {
				for _, o := range tensorsOf(m, "outputs") {
					if inSHM(o) {
						delete(o, "parameters")
					}
				}
			})
		}},
		// Ignoring the output's region, it also takes one too small.
		failed: []string{"OIP-EXT-SHM-004", "OIP-EXT-SHM-015"},
	},
	{
		name: "rest-shm-data-wins-over-region",
		rest: &restHook{in: func(r *http.Request) {
			editInferRequest(r, func(m map[string]any) {
				for _, in := range tensorsOf(m, "inputs") {
					if _, hasData := in["data"]; hasData && inSHM(in) {
						delete(in, "parameters")
					}
				}
			})
		}},
		lenient: []string{"OIP-EXT-SHM-003"},
	},
	{
		name: "grpc-shm-status-ignores-name",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if _, ok := req.(*pb.SystemSharedMemoryStatusRequest); ok {
				req = &pb.SystemSharedMemoryStatusRequest{}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-SHM-013"},
	},
	{
		name: "grpc-shm-outputs-returned-as-contents",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok {
				for _, o := range r.GetOutputs() {
					if _, ok := o.GetParameters()["shared_memory_region"]; ok {
						o.Parameters = nil
					}
				}
			}
			return h(ctx, req)
		},
		// Ignoring the output's region, it also takes one too small.
		failed: []string{"OIP-EXT-SHM-004", "OIP-EXT-SHM-015"},
	},
}

// registerIgnoresOffset maps every region it registers over REST from its
// object's start, whatever offset the request gives.
var registerIgnoresOffset = breakage{
	name: "rest-shm-register-ignores-offset",
	rest: &restHook{in: func(r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/register") {
			return
		}
		var m map[string]any
		if json.Unmarshal(requestBody(r), &m) != nil || m["offset"] == nil {
			return
		}
		m["offset"] = 0
		body, _ := json.Marshal(m)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}},
	// The status lists the offset it keeps (OIP-EXT-SHM-006), and inputs
	// are read from the wrong place (OIP-EXT-SHM-007).
	failed: []string{"OIP-EXT-SHM-006", "OIP-EXT-SHM-007"},
}

// grpcRegisterIgnoresOffset is registerIgnoresOffset over gRPC.
var grpcRegisterIgnoresOffset = breakage{
	name: "grpc-shm-register-ignores-offset",
	grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*pb.SystemSharedMemoryRegisterRequest); ok {
			req = &pb.SystemSharedMemoryRegisterRequest{Name: r.GetName(), Key: r.GetKey(), ByteSize: r.GetByteSize()}
		}
		return h(ctx, req)
	},
	// Inputs are read from the wrong place (OIP-EXT-SHM-007); the status
	// lists the offset it keeps, and an offset past the object is taken
	// (OIP-EXT-SHM-013, gRPC's rules for the three calls).
	failed: []string{"OIP-EXT-SHM-007", "OIP-EXT-SHM-013"},
}
