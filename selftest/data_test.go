package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// Breakages and a conformant variant for the hard data (issue 8, item 5):
// each breakage mangles one kind of value the way a real server does (a
// float64 JSON stack, a NaN-unaware encoder, a str-based BYTES path, …) in
// every form it travels, and the specs of exactly those values must fail.

func init() {
	breakages = append(breakages,
		breakage{
			// A server that holds 64-bit integers as float64 (JavaScript,
			// a pandas column): exact up to 2^53, rounded beyond.
			name: "int64-through-float64",
			rest: &restHook{out: onRESTOutputs(mapOutputs(int64ViaFloat64))},
			grpc: onInfer(func(_ *pb.ModelInferRequest, r *pb.ModelInferResponse) { editPBOutputs(r, mapOutputs(int64ViaFloat64)) }),
			// Binary, typed and raw carry every bit; in JSON, A-21 only asks
			// to record what happens beyond 2^53, and the graded JSON data
			// stays within it.
			failed: []string{"OIP-EXT-BIN-002", "OIP-GRPC-INFER-009", "OIP-GRPC-RAW-001"},
			warned: []string{"OIP-GRPC-RAW-005"},
			quiet:  []string{"OIP-REST-DATA-007"},
		},
		breakage{
			name: "nan-becomes-zero",
			rest: &restHook{out: onRESTOutputs(mapOutputs(nanToZero))},
			grpc: onInfer(func(_ *pb.ModelInferRequest, r *pb.ModelInferResponse) { editPBOutputs(r, mapOutputs(nanToZero)) }),
			// JSON cannot carry NaN: what comes back there is
			// recorded, not graded.
			failed: []string{"OIP-EXT-BIN-002", "OIP-GRPC-INFER-009", "OIP-GRPC-INFER-011", "OIP-GRPC-RAW-001"},
			warned: []string{"OIP-EXT-BIN-016", "OIP-GRPC-RAW-005"},
			quiet:  []string{"OIP-REST-DATA-008", "OIP-REST-DATA-009"},
		},
		breakage{
			// BYTES through a str: invalid UTF-8 becomes U+FFFD.
			name:   "non-utf8-bytes-mangled",
			rest:   &restHook{out: onRESTOutputs(mapOutputs(mangleBytes))},
			grpc:   onInfer(func(_ *pb.ModelInferRequest, r *pb.ModelInferResponse) { editPBOutputs(r, mapOutputs(mangleBytes)) }),
			failed: []string{"OIP-EXT-BIN-004", "OIP-GRPC-INFER-009", "OIP-GRPC-RAW-001"},
			warned: []string{"OIP-GRPC-RAW-005", "OIP-GRPC-RAW-006"},
			quiet:  []string{"OIP-REST-DATA-010"},
		},
		breakage{
			// It accepts a tensor with a 0 dimension and answers without it.
			name: "zero-size-outputs-dropped",
			rest: &restHook{out: onRESTOutputs(func(t tensor.Tensor) (tensor.Tensor, bool) { return t, t.Len() > 0 })},
			grpc: onInfer(func(_ *pb.ModelInferRequest, r *pb.ModelInferResponse) {
				editPBOutputs(r, func(t tensor.Tensor) (tensor.Tensor, bool) { return t, t.Len() > 0 })
			}),
			failed: []string{"OIP-GRPC-INFER-005", "OIP-REST-INFER-016", "OIP-REST-INFER-017"},
			// Failing only on exchanges a failed requirement above fails too:
			// one defect, blocked by it.
			blocked: []string{"OIP-EXT-BIN-006", "OIP-GRPC-INFER-009", "OIP-GRPC-RAW-001"},
			warned:  []string{"OIP-REST-DATA-012"},
		},
		breakage{
			// A large output cut at 4096 elements, its shape unchanged.
			name: "large-outputs-truncated",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isInfer(r) && a.status == 200 && a.header.Get("Inference-Header-Content-Length") == "" {
					editJSON(a, func(m map[string]any) {
						for _, o := range outputs(m) {
							if d, ok := o["data"].([]any); ok && len(d) > 4096 {
								o["data"] = d[:4096]
							}
						}
					})
				}
			}},
			grpc: onInfer(func(_ *pb.ModelInferRequest, r *pb.ModelInferResponse) {
				editPBOutputs(r, func(t tensor.Tensor) (tensor.Tensor, bool) {
					if t.Len() > 4096 {
						t.Data = reflectSlice(t.Data, 4096)
					}
					return t, true
				})
			}),
			failed: []string{"OIP-REST-DATA-003", "OIP-GRPC-INFER-009", "OIP-GRPC-INFER-011", "OIP-GRPC-RAW-001"},
			warned: []string{"OIP-REST-DATA-006", "OIP-REST-DATA-007", "OIP-REST-DATA-008", "OIP-REST-DATA-010", "OIP-GRPC-RAW-005", "OIP-GRPC-RAW-006"},
		},
		breakage{
			// pydantic's Optional[str] = None: "id": null when the request
			// had no id.
			name: "rest-null-id-without-request-id",
			rest: &restHook{
				in: markNoID,
				out: func(r *http.Request, a *answer) {
					if isInfer(r) && a.status == 200 && r.Header.Get("X-Selftest-No-Id") != "" {
						editJSON(a, func(m map[string]any) { m["id"] = nil })
					}
				}},
			failed: []string{"OIP-REST-RESP-004"},
		},
		breakage{
			name: "rest-model-name-member-in-other-case",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isInfer(r) && a.status == 200 {
					editJSON(a, func(m map[string]any) {
						m["Model_Name"] = m["model_name"]
						delete(m, "model_name")
					})
				}
			}},
			failed: []string{"OIP-REST-RESP-002"},
		},
		breakage{
			// Two model_name members; encoding/json keeps the last, right
			// one, so only a strict reading sees it.
			name: "rest-duplicate-model-name-member",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isInfer(r) && a.status == 200 && bytes.HasPrefix(a.body, []byte("{")) {
					prefix := []byte(`{"model_name":"other",`)
					a.body = append(prefix, a.body[1:]...)
					if v := a.header.Get("Inference-Header-Content-Length"); v != "" {
						n, _ := strconv.Atoi(v)
						a.header.Set("Inference-Header-Content-Length", strconv.Itoa(n+len(prefix)-1))
					}
				}
			}},
			failed: []string{"OIP-REST-RESP-002"},
		},
		breakage{
			name: "rest-model-metadata-null-platform",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v2/models/") && !strings.HasSuffix(r.URL.Path, "/ready") &&
					!strings.HasSuffix(r.URL.Path, "/config") && a.status == 200 {
					editJSON(a, func(m map[string]any) { m["platform"] = nil })
				}
			}},
			failed: []string{"OIP-REST-MMETA-002"},
		},
		breakage{
			// It reshapes an input whose element count fits the model and
			// computes, instead of refusing the shape the metadata rules out.
			name: "computes-with-wrong-dimensions",
			rest: &restHook{in: reshapeRESTAddSub},
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if r, ok := req.(*pb.ModelInferRequest); ok {
					for _, in := range r.Inputs {
						in.Shape = modelShape(r.ModelName, in.Shape)
					}
				}
				return h(ctx, req)
			},
			// The rule binds clients over REST (lenient); over gRPC it is
			// OIP-GRPC-INFER-013, which binds servers at level implied.
			lenient: []string{"OIP-REST-INFER-012"},
			warned:  []string{"OIP-GRPC-INFER-013"},
		},
		breakage{
			// A binary input whose binary_data_size disagrees with its
			// shape is cut or padded with zeros to fit, instead of refused.
			name:    "rest-fits-binary-inputs-to-their-shape",
			rest:    &restHook{in: fitBinaryInputs},
			lenient: []string{"OIP-REST-INFER-014"},
		},
		breakage{
			name: "rest-500-for-nan-strings",
			rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
				if isInfer(r) && bytes.Contains(requestBody(r), []byte(`"NaN"`)) {
					jsonError(w, 500, `{"error":"ValueError: could not convert string to float"}`)
					return true
				}
				return false
			}},
			// Refusing NaN in JSON is fine; a 5xx is not.
			failed: []string{"OIP-REST-ERR-003"},
			quiet:  []string{"OIP-REST-DATA-008"},
		},
		breakage{
			name: "rest-500-for-uint64-parameter",
			rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
				if isInfer(r) && bytes.Contains(requestBody(r), []byte(`"oipkit_u":18446744073709551615`)) {
					jsonError(w, 500, `{"error":"OverflowError: int too big to convert"}`)
					return true
				}
				return false
			}},
			failed: []string{"OIP-REST-PARAM-001"},
		},
		breakage{
			// Refusing parameters outside what it knows is allowed:
			// a warning over REST, a note for gRPC double/uint64.
			name: "refuses-floating-point-and-uint64-parameters",
			rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
				if isInfer(r) && bytes.Contains(requestBody(r), []byte(`"oipkit_d"`)) {
					jsonError(w, 400, `{"error":"parameter oipkit_d has invalid type"}`)
					return true
				}
				return false
			}},
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if r, ok := req.(*pb.ModelInferRequest); ok && hasWideParameter(r) {
					return nil, status.Error(codes.InvalidArgument, "double and uint64 parameters are not supported")
				}
				return h(ctx, req)
			},
			warned: []string{"OIP-REST-PARAM-001"},
			quiet:  []string{"OIP-GRPC-PARAM-001", "OIP-GRPC-ERR-002"},
		},
		breakage{
			name: "grpc-internal-for-empty-tensors",
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if r, ok := req.(*pb.ModelInferRequest); ok {
					for _, in := range r.Inputs {
						if n, err := tensor.ElementCount(in.Shape); err == nil && n == 0 && len(in.Shape) > 0 {
							return nil, status.Error(codes.Internal, "numpy: cannot reshape array of size 0")
						}
					}
				}
				return h(ctx, req)
			},
			// Refusing an empty tensor is fine; INTERNAL says the
			// server broke on it, not that it refused a request.
			warned: []string{"OIP-GRPC-ERR-002"},
		},
		breakage{
			// Control characters (NUL, tab, newline…) stripped from the id.
			name: "id-control-characters-stripped",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isInfer(r) && a.status == 200 {
					editJSON(a, func(m map[string]any) {
						if id, ok := m["id"].(string); ok {
							m["id"] = stripControl(id)
						}
					})
				}
			}},
			grpc:   onInfer(func(_ *pb.ModelInferRequest, r *pb.ModelInferResponse) { r.Id = stripControl(r.Id) }),
			failed: []string{"OIP-GRPC-INFER-003", "OIP-REST-INFER-006"},
			// Failing only on exchanges a failed requirement above fails too:
			// one defect, blocked by it.
			blocked: []string{"OIP-REST-RESP-004"},
		},
		breakage{
			// Names matched case-insensitively: Add_Sub, input0, output0
			// and int32 are taken for add_sub, INPUT0, OUTPUT0 and INT32.
			name: "names-case-insensitive",
			rest: &restHook{in: func(r *http.Request) {
				if !isInfer(r) || r.Header.Get("Inference-Header-Content-Length") != "" {
					return
				}
				r.URL.Path = strings.Replace(r.URL.Path, "/Add_Sub/", "/add_sub/", 1)
				body := requestBody(r)
				for _, pair := range [][2]string{{`"input0"`, `"INPUT0"`}, {`"output0"`, `"OUTPUT0"`}, {`"int32"`, `"INT32"`}} {
					body = bytes.ReplaceAll(body, []byte(pair[0]), []byte(pair[1]))
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}},
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if r, ok := req.(*pb.ModelInferRequest); ok {
					r.ModelName = strings.ReplaceAll(r.ModelName, "Add_Sub", "add_sub")
					for _, in := range r.Inputs {
						in.Name, in.Datatype = strings.ToUpper(in.Name), strings.ToUpper(in.Datatype)
					}
					for _, o := range r.Outputs {
						o.Name = strings.ToUpper(o.Name)
					}
				}
				return h(ctx, req)
			},
			// KS-REQ's MUST, which OIP dropped.
			warned: []string{"OIP-GEN-003"},
		},
		breakage{
			// Inputs and requested outputs the model does not have are
			// ignored, and a repeated input is taken once.
			name: "ignores-extra-inputs-and-unknown-outputs",
			rest: &restHook{in: func(r *http.Request) {
				if !isInfer(r) || r.Header.Get("Inference-Header-Content-Length") != "" {
					return
				}
				var m map[string]any
				dec := json.NewDecoder(bytes.NewReader(requestBody(r)))
				dec.UseNumber()
				if dec.Decode(&m) != nil {
					return
				}
				m["inputs"] = keepNamed(m["inputs"], "INPUT2")
				m["outputs"] = keepNamed(m["outputs"], "NOPE")
				if outs, ok := m["outputs"].([]any); ok && len(outs) == 0 {
					delete(m, "outputs")
				}
				body, _ := json.Marshal(m)
				r.Body = io.NopCloser(bytes.NewReader(body))
			}},
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if r, ok := req.(*pb.ModelInferRequest); ok && len(r.RawInputContents) == 0 {
					var ins []*pb.ModelInferRequest_InferInputTensor
					seen := map[string]bool{}
					for _, in := range r.Inputs {
						if in.Name != "INPUT2" && !seen[in.Name] {
							ins = append(ins, in)
						}
						seen[in.Name] = true
					}
					r.Inputs = ins
					r.Outputs = slices.DeleteFunc(r.Outputs, func(o *pb.ModelInferRequest_InferRequestedOutputTensor) bool { return o.Name == "NOPE" })
				}
				return h(ctx, req)
			},
			lenient: []string{"OIP-REST-INFER-020", "OIP-REST-INFER-021"},
			warned:  []string{"OIP-GRPC-INFER-006", "OIP-GRPC-INFER-013"},
		},
		breakage{
			// UNAVAILABLE says "try again later", not "no such model".
			name: "grpc-unavailable-for-unknown-model-ready",
			grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if r, ok := req.(*pb.ModelReadyRequest); ok && r.Name == "does_not_exist" {
					return nil, status.Error(codes.Unavailable, "model does_not_exist is not available")
				}
				return h(ctx, req)
			},
			warned: []string{"OIP-GRPC-ERR-002"},
		},
	)

	variants = append(variants, breakage{
		// Choices the catalog leaves to servers, all at once: chunked
		// REST answers (no Content-Length), nested JSON output data
		// extra members everywhere, outputs in reverse
		// order, NaN as null in JSON and "NaN" strings refused
		// raw outputs for typed gRPC requests, empty
		// tensors refused over gRPC, double and uint64 parameters
		// refused.
		name: "chunked-nested-extra-members",
		rest: &restHook{
			serve: func(w http.ResponseWriter, r *http.Request) bool {
				if isInfer(r) && bytes.Contains(requestBody(r), []byte(`"NaN"`)) {
					jsonError(w, 400, `{"error":"NaN is not JSON"}`)
					return true
				}
				return false
			},
			out: func(r *http.Request, a *answer) {
				a.chunked = true
				if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "application/") {
					return
				}
				p := r.URL.Path
				switch {
				case r.Method == http.MethodGet && (p == "/v2" || strings.HasPrefix(p, "/v2/models/") && !strings.HasSuffix(p, "/ready")):
					editJSON(a, func(m map[string]any) {
						m["x_extra"] = map[string]any{"nested": []any{nil, true}}
						for _, k := range []string{"inputs", "outputs"} {
							list, _ := m[k].([]any)
							for _, t := range list {
								if tm, ok := t.(map[string]any); ok {
									tm["x_extra"] = nil
								}
							}
						}
					})
				case isInfer(r):
					binary := a.header.Get("Inference-Header-Content-Length") != ""
					editJSON(a, func(m map[string]any) {
						m["x_extra"] = []any{nil, map[string]any{}}
						for _, o := range outputs(m) {
							o["x_extra"] = nil
							if d, ok := o["data"].([]any); ok {
								for i, v := range d {
									if s, ok := v.(string); ok && o["datatype"] != "BYTES" && (s == "NaN" || strings.HasSuffix(s, "Infinity")) {
										d[i] = nil
									}
								}
								o["data"] = nest(d, o["shape"])
							}
						}
						if outs, ok := m["outputs"].([]any); ok && !binary {
							slices.Reverse(outs)
						}
					})
				}
			},
		},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok {
				if hasWideParameter(r) {
					return nil, status.Error(codes.InvalidArgument, "double and uint64 parameters are not supported")
				}
				for _, in := range r.Inputs {
					if n, err := tensor.ElementCount(in.Shape); err == nil && n == 0 && len(in.Shape) > 0 {
						return nil, status.Error(codes.InvalidArgument, "empty tensors are not supported")
					}
				}
			}
			resp, err := h(ctx, req)
			if r, ok := resp.(*pb.ModelInferResponse); ok && err == nil {
				toRawOutputs(r)
				slices.Reverse(r.Outputs)
				slices.Reverse(r.RawOutputContents)
			}
			return resp, err
		},
	})
}

// ----- value manglers -----

// mapOutputs applies fn to every output tensor, keeping them all.
func mapOutputs(fn func(tensor.Tensor) tensor.Tensor) func(tensor.Tensor) (tensor.Tensor, bool) {
	return func(t tensor.Tensor) (tensor.Tensor, bool) { return fn(t), true }
}

func int64ViaFloat64(t tensor.Tensor) tensor.Tensor {
	switch v := t.Data.(type) {
	case []int64:
		out := make([]int64, len(v))
		for i, x := range v {
			f := float64(x)
			if f >= math.MaxInt64 {
				out[i] = math.MaxInt64 // saturate, as a careful float64 stack does
			} else {
				out[i] = int64(f)
			}
		}
		t.Data = out
	case []uint64:
		out := make([]uint64, len(v))
		for i, x := range v {
			f := float64(x)
			if f >= math.MaxUint64 {
				out[i] = math.MaxUint64
			} else {
				out[i] = uint64(f)
			}
		}
		t.Data = out
	}
	return t
}

func nanToZero(t tensor.Tensor) tensor.Tensor {
	switch v := t.Data.(type) {
	case []float32:
		out := slices.Clone(v)
		for i, x := range out {
			if x != x {
				out[i] = 0
			}
		}
		t.Data = out
	case []float64:
		out := slices.Clone(v)
		for i, x := range out {
			if x != x {
				out[i] = 0
			}
		}
		t.Data = out
	case []tensor.Float16:
		out := slices.Clone(v)
		for i, x := range out {
			if x&0x7c00 == 0x7c00 && x&0x3ff != 0 {
				out[i] = 0
			}
		}
		t.Data = out
	case []tensor.BFloat16:
		out := slices.Clone(v)
		for i, x := range out {
			if x&0x7f80 == 0x7f80 && x&0x7f != 0 {
				out[i] = 0
			}
		}
		t.Data = out
	}
	return t
}

func mangleBytes(t tensor.Tensor) tensor.Tensor {
	if v, ok := t.Data.([][]byte); ok {
		out := make([][]byte, len(v))
		for i, b := range v {
			out[i] = []byte(strings.ToValidUTF8(string(b), "\ufffd"))
		}
		t.Data = out
	}
	return t
}

// reflectSlice cuts a tensor's data slice to n elements.
func reflectSlice(data any, n int) any {
	switch v := data.(type) {
	case []bool:
		return v[:n]
	case []uint8:
		return v[:n]
	case []uint16:
		return v[:n]
	case []uint32:
		return v[:n]
	case []uint64:
		return v[:n]
	case []int8:
		return v[:n]
	case []int16:
		return v[:n]
	case []int32:
		return v[:n]
	case []int64:
		return v[:n]
	case []tensor.Float16:
		return v[:n]
	case []tensor.BFloat16:
		return v[:n]
	case []float32:
		return v[:n]
	case []float64:
		return v[:n]
	case [][]byte:
		return v[:n]
	}
	return data
}

// ----- editing outputs in every form -----

// onRESTOutputs returns a response rewrite that decodes every output of a
// successful inference answer (JSON data or binary data), lets fn change or
// drop it, and writes it back in the same form.
func onRESTOutputs(fn func(tensor.Tensor) (tensor.Tensor, bool)) func(*http.Request, *answer) {
	return func(r *http.Request, a *answer) {
		if isInfer(r) && a.status == 200 {
			editRESTOutputs(a, fn)
		}
	}
}

func editRESTOutputs(a *answer, fn func(tensor.Tensor) (tensor.Tensor, bool)) {
	hl := len(a.body)
	if v := a.header.Get("Inference-Header-Content-Length"); v != "" {
		hl, _ = strconv.Atoi(v)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(a.body[:hl], &top) != nil {
		return
	}
	var outs []map[string]json.RawMessage
	if json.Unmarshal(top["outputs"], &outs) != nil {
		return
	}
	tail := a.body[hl:]
	var newTail []byte
	var kept []map[string]json.RawMessage
	for _, o := range outs {
		var name, datatype string
		var shape []int64
		var params map[string]any
		json.Unmarshal(o["name"], &name)
		json.Unmarshal(o["datatype"], &datatype)
		json.Unmarshal(o["shape"], &shape)
		json.Unmarshal(o["parameters"], &params)
		d := tensor.Datatype(datatype)
		size, binary := params["binary_data_size"].(float64)
		var t tensor.Tensor
		var err error
		if binary {
			n := min(int(size), len(tail))
			t, err = tensor.DecodeRaw(name, d, shape, tail[:n])
			tail = tail[n:]
		} else {
			var data any
			data, err = tensor.DecodeJSONData(d, shape, o["data"], 0)
			t = tensor.Tensor{Name: name, Datatype: d, Shape: shape, Data: data}
		}
		if err != nil {
			return // not ours to mangle
		}
		t, keep := fn(t)
		if !keep {
			continue
		}
		if binary {
			raw, _ := tensor.EncodeRaw(t)
			newTail = append(newTail, raw...)
			params["binary_data_size"] = len(raw)
			o["parameters"], _ = json.Marshal(params)
		} else {
			o["data"], _ = tensor.AppendJSONData(nil, t)
		}
		kept = append(kept, o)
	}
	if kept == nil {
		kept = []map[string]json.RawMessage{}
	}
	top["outputs"], _ = json.Marshal(kept)
	js, _ := json.Marshal(top)
	a.body = append(js, newTail...)
	if a.header.Get("Inference-Header-Content-Length") != "" {
		a.header.Set("Inference-Header-Content-Length", strconv.Itoa(len(js)))
	}
}

// editPBOutputs is editRESTOutputs for a ModelInfer answer, typed or raw.
func editPBOutputs(r *pb.ModelInferResponse, fn func(tensor.Tensor) (tensor.Tensor, bool)) {
	raw := r.RawOutputContents
	var outs []*pb.ModelInferResponse_InferOutputTensor
	var newRaw [][]byte
	for i, o := range r.Outputs {
		var t tensor.Tensor
		var err error
		if len(raw) > 0 {
			if i >= len(raw) {
				return
			}
			t, err = tensor.DecodeRaw(o.Name, tensor.Datatype(o.Datatype), o.Shape, raw[i])
		} else {
			t, err = tensor.FromContents(o.Name, tensor.Datatype(o.Datatype), o.Shape, o.Contents)
		}
		if err != nil {
			return
		}
		t, keep := fn(t)
		if !keep {
			continue
		}
		if len(raw) > 0 {
			b, _ := tensor.EncodeRaw(t)
			newRaw = append(newRaw, b)
		} else {
			o.Contents, _ = tensor.ToContents(t)
		}
		outs = append(outs, o)
	}
	r.Outputs = outs
	if len(raw) > 0 {
		r.RawOutputContents = newRaw
	}
}

// ----- request rewrites -----

// markNoID tags an inference request whose JSON has no id.
func markNoID(r *http.Request) {
	if !isInfer(r) {
		return
	}
	body := requestBody(r)
	hl := len(body)
	if v := r.Header.Get("Inference-Header-Content-Length"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n <= len(body) {
			hl = n
		}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body[:hl], &m) == nil {
		if _, ok := m["id"]; !ok {
			r.Header.Set("X-Selftest-No-Id", "1")
		}
	}
}

// reshapeRESTAddSub gives every add_sub JSON input the model's shape when
// its element count allows, and a scalar sent to an identity model the
// shape [1,1].
func reshapeRESTAddSub(r *http.Request) {
	if !isInfer(r) || r.Header.Get("Inference-Header-Content-Length") != "" {
		return
	}
	model := strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/infer"), "/v2/models/")
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(requestBody(r)))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return
	}
	ins, _ := m["inputs"].([]any)
	for _, in := range ins {
		im, _ := in.(map[string]any)
		var shape []int64
		raw, _ := json.Marshal(im["shape"])
		if json.Unmarshal(raw, &shape) == nil {
			im["shape"] = modelShape(model, shape)
		}
	}
	body, _ := json.Marshal(m)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
}

// modelShape is, for add_sub, [n, 16] for a shape of 16n elements; for an
// identity model, [1,1] for a scalar; else shape.
func modelShape(model string, shape []int64) []int64 {
	if strings.HasPrefix(model, "identity_") && len(shape) == 0 {
		return []int64{1, 1}
	}
	n, err := tensor.ElementCount(shape)
	if model != "add_sub" || err != nil || n == 0 || n%16 != 0 || len(shape) == 2 && shape[1] == 16 {
		return shape
	}
	return []int64{n / 16, 16}
}

// hasWideParameter reports a double or uint64 parameter anywhere in r.
func hasWideParameter(r *pb.ModelInferRequest) bool {
	maps := []map[string]*pb.InferParameter{r.Parameters}
	for _, in := range r.Inputs {
		maps = append(maps, in.Parameters)
	}
	for _, o := range r.Outputs {
		maps = append(maps, o.Parameters)
	}
	for _, m := range maps {
		for _, p := range m {
			switch p.GetParameterChoice().(type) {
			case *pb.InferParameter_DoubleParam, *pb.InferParameter_Uint64Param:
				return true
			}
		}
	}
	return false
}

func stripControl(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 {
			return -1
		}
		return r
	}, s)
}

// keepNamed drops from a JSON list of tensors those named drop, and every
// repeat of a name already kept.
func keepNamed(list any, drop string) any {
	items, ok := list.([]any)
	if !ok {
		return list
	}
	out := []any{}
	seen := map[any]bool{}
	for _, it := range items {
		m, _ := it.(map[string]any)
		if m == nil || m["name"] == drop || seen[m["name"]] {
			continue
		}
		seen[m["name"]] = true
		out = append(out, it)
	}
	return out
}

// fitBinaryInputs cuts or zero-pads every binary input of a consistent
// request (the binary_data_size add up to the tail) to the size its shape
// and datatype imply.
func fitBinaryInputs(r *http.Request) {
	hv := r.Header.Get("Inference-Header-Content-Length")
	if !isInfer(r) || hv == "" {
		return
	}
	body := requestBody(r)
	hl, err := strconv.Atoi(hv)
	if err != nil || hl > len(body) {
		return
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body[:hl]))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return
	}
	ins, _ := m["inputs"].([]any)
	tail := body[hl:]
	var newTail []byte
	sum, changed := 0, false
	for _, in := range ins {
		im, _ := in.(map[string]any)
		params, _ := im["parameters"].(map[string]any)
		sizeNum, ok := params["binary_data_size"].(json.Number)
		if !ok {
			continue
		}
		size, _ := strconv.Atoi(string(sizeNum))
		if sum+size > len(tail) {
			return
		}
		buf := tail[sum : sum+size]
		sum += size
		var shape []int64
		raw, _ := json.Marshal(im["shape"])
		d, _ := im["datatype"].(string)
		elem := tensor.Datatype(d).Size()
		if json.Unmarshal(raw, &shape) != nil || elem <= 0 {
			newTail = append(newTail, buf...)
			continue
		}
		n, err := tensor.ElementCount(shape)
		if err != nil {
			newTail = append(newTail, buf...)
			continue
		}
		want := int(n) * elem
		if want != size {
			buf = append(append([]byte(nil), buf...), make([]byte, max(0, want-size))...)[:want]
			params["binary_data_size"] = want
			changed = true
		}
		newTail = append(newTail, buf...)
	}
	if !changed || sum != len(tail) {
		return
	}
	js, _ := json.Marshal(m)
	r.Body = io.NopCloser(bytes.NewReader(append(js, newTail...)))
	r.Header.Set("Inference-Header-Content-Length", strconv.Itoa(len(js)))
}
