package selftest

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc"

	"github.com/oipkit/oipkit/fixture"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// Servers whose classification goes wrong for some output datatypes only
// (conformance/suite/ext_cls_types.go): each recomputes the classes of an
// identity_<dtype> answer from the request's input, wrong in one way.

func init() { breakages = append(breakages, clsTypeBreakages...) }

var clsTypeBreakages = []breakage{
	{
		// Every element compared as a float64: INT64 and UINT64 values
		// beyond 2^53 tie, and the stable sort keeps index order.
		name:   "grpc-cls-compares-through-float64",
		grpc:   reclassify(func(t tensor.Tensor, k int) [][]byte { return classesBy(t, k, asFloat64) }),
		failed: []string{"OIP-EXT-CLS-004"},
	},
	{
		// Unsigned elements compared as the signed integers of their bits.
		name:   "grpc-cls-compares-unsigned-as-signed",
		grpc:   reclassify(func(t tensor.Tensor, k int) [][]byte { return classesBy(t, k, unsignedAsSigned) }),
		failed: []string{"OIP-EXT-CLS-004"},
	},
	{
		// UINT64 values printed through a float ("1.8446744e+19").
		name: "grpc-cls-formats-uint64-through-float",
		grpc: reclassify(func(t tensor.Tensor, k int) [][]byte {
			out := fixtureClasses(t, k)
			if t.Datatype != tensor.Uint64 {
				return out
			}
			for i, s := range out {
				value, rest, _ := strings.Cut(string(s), ":")
				if v, err := strconv.ParseUint(value, 10, 64); err == nil {
					out[i] = []byte(strconv.FormatFloat(float64(v), 'e', 7, 64) + ":" + rest)
				}
			}
			return out
		}),
		failed: []string{"OIP-EXT-CLS-005"},
	},
	{
		// Classification of a BYTES output crashes the server: a 500.
		name: "rest-cls-500-for-bytes",
		rest: fault500(func(r *http.Request, b string) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/v2/models/identity_bytes/infer" && strings.Contains(b, `"classification"`)
		}),
		failed: []string{"OIP-EXT-CLS-004"},
	},
}

// reclassify answers a ModelInfer of identity_<dtype> asking for the
// classes of OUTPUT0 with classes(input, k) in place of the server's.
func reclassify(classes func(t tensor.Tensor, k int) [][]byte) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		r, ok := req.(*pb.ModelInferRequest)
		out, isResp := resp.(*pb.ModelInferResponse)
		if !ok || !isResp || err != nil || !strings.HasPrefix(r.GetModelName(), "identity_") || len(r.GetInputs()) != 1 || len(r.GetOutputs()) != 1 {
			return resp, err
		}
		k := r.GetOutputs()[0].GetParameters()["classification"].GetInt64Param()
		if k < 1 {
			return resp, err
		}
		in := r.GetInputs()[0]
		var t tensor.Tensor
		var derr error
		if len(r.GetRawInputContents()) == 1 {
			t, derr = tensor.DecodeRaw(in.GetName(), tensor.Datatype(in.GetDatatype()), in.GetShape(), r.GetRawInputContents()[0])
		} else {
			t, derr = tensor.FromContents(in.GetName(), tensor.Datatype(in.GetDatatype()), in.GetShape(), in.GetContents())
		}
		if derr != nil || len(t.Shape) != 2 || t.Shape[0] != 1 {
			return resp, err
		}
		editPBOutputs(out, func(o tensor.Tensor) (tensor.Tensor, bool) {
			if o.Datatype == tensor.Bytes {
				o.Data = classes(t, int(k))
			}
			return o, true
		})
		return resp, err
	}
}

// fixtureClasses are the right classes of a [1, n] row.
func fixtureClasses(t tensor.Tensor, k int) [][]byte {
	c, err := fixture.Classify(t, int64(k), nil)
	if err != nil {
		return nil
	}
	return c.Data.([][]byte)
}

// classesBy ranks a [1, n] row by key (highest first, ties in index
// order), writing each value as the fixture does.
func classesBy[K cmp.Ordered](t tensor.Tensor, k int, key func(tensor.Tensor) []K) [][]byte {
	n := t.Len()
	text := map[int]string{} // index → "value:index"
	for _, s := range fixtureClasses(t, n) {
		value, idx, _ := strings.Cut(string(s), ":")
		i, _ := strconv.Atoi(idx)
		text[i] = value + ":" + idx
	}
	keys := key(t)
	if len(keys) != n {
		return fixtureClasses(t, k)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(keys[b], keys[a]) })
	var out [][]byte
	for _, i := range order[:min(k, n)] {
		out = append(out, []byte(text[i]))
	}
	return out
}

// asFloat64 are the elements of a numeric row as float64.
func asFloat64(t tensor.Tensor) []float64 {
	switch v := t.Data.(type) {
	case []int64:
		return convert(v, func(x int64) float64 { return float64(x) })
	case []uint64:
		return convert(v, func(x uint64) float64 { return float64(x) })
	}
	// The narrower types are exact in float64: the fixture's order.
	c, err := fixture.Classify(t, int64(t.Len()), nil)
	if err != nil {
		return nil
	}
	keys := make([]float64, t.Len())
	for rank, s := range c.Data.([][]byte) {
		_, idx, _ := strings.Cut(string(s), ":")
		i, _ := strconv.Atoi(idx)
		keys[i] = float64(t.Len() - rank)
	}
	return keys
}

// unsignedAsSigned are the elements of an unsigned row read as signed
// integers of their width; other rows keep their order.
func unsignedAsSigned(t tensor.Tensor) []int64 {
	switch v := t.Data.(type) {
	case []uint8:
		return convert(v, func(x uint8) int64 { return int64(int8(x)) })
	case []uint16:
		return convert(v, func(x uint16) int64 { return int64(int16(x)) })
	case []uint32:
		return convert(v, func(x uint32) int64 { return int64(int32(x)) })
	case []uint64:
		return convert(v, func(x uint64) int64 { return int64(x) })
	}
	f := asFloat64(t)
	if _, wide := t.Data.([]int64); wide || f == nil {
		return nil // fall back to the right classes
	}
	return convert(f, func(x float64) int64 { return int64(x) })
}

func convert[A, B any](in []A, f func(A) B) []B {
	out := make([]B, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}
