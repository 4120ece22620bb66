package suite

import (
	"fmt"
	"math"
	"strings"

	"github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/fixture"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// Named test values. The outputs the suite expects are computed from these
// by the fixture oracle (package fixture, the fixture contract as code),
// never read from the server under test.

// identityFixture is the identity fixture of datatype d ("identity_fp32").
func identityFixture(d tensor.Datatype) string { return "identity_" + d.Lower() }

// sample returns the [2,3] test tensor of datatype d used for identity round
// trips: distinct values including the type's extremes, so that a swapped,
// truncated or narrowed element is visible.
func sample(name string, d tensor.Datatype) tensor.Tensor {
	var data any
	switch d {
	case tensor.Bool:
		data = []bool{true, false, true, true, false, false}
	case tensor.Uint8:
		data = []uint8{0, 1, 2, 127, 254, math.MaxUint8}
	case tensor.Uint16:
		data = []uint16{0, 1, 2, 1000, 65534, math.MaxUint16}
	case tensor.Uint32:
		data = []uint32{0, 1, 2, 1_000_000, math.MaxUint32 - 1, math.MaxUint32}
	case tensor.Uint64:
		data = []uint64{0, 1, 2, 1 << 40, 1<<53 + 1, math.MaxUint64}
	case tensor.Int8:
		data = []int8{math.MinInt8, -1, 0, 1, 2, math.MaxInt8}
	case tensor.Int16:
		data = []int16{math.MinInt16, -1, 0, 1, 2, math.MaxInt16}
	case tensor.Int32:
		data = []int32{math.MinInt32, -1, 0, 1, 2, math.MaxInt32}
	case tensor.Int64:
		data = []int64{math.MinInt64, -1, 0, 1, 1<<53 + 1, math.MaxInt64}
	case tensor.FP16:
		data = []tensor.Float16{0x3800, 0xbd00, 0x0000, 0x3c00, 0x4000, 0x7bff} // 0.5 -1.25 0 1 2 65504
	case tensor.BF16:
		data = []tensor.BFloat16{0x3f00, 0xbfa0, 0x0000, 0x3f80, 0x4000, 0x7f7f} // 0.5 -1.25 0 1 2 max
	case tensor.FP32:
		data = []float32{0.5, -1.25, 0, 1, math.MaxFloat32, -3.0e-38}
	case tensor.FP64:
		data = []float64{0.5, -1.25, 0, 1, math.MaxFloat64, -1e-300}
	case tensor.Bytes:
		data = [][]byte{[]byte("abc"), {}, []byte("é"), []byte("hi"), []byte("x y"), []byte("0")}
	}
	return tensor.Tensor{Name: name, Datatype: d, Shape: []int64{2, 3}, Data: data}
}

// jsonSafeSample is sample with INT64/UINT64 values no larger than 2^53 in
// magnitude, which every JSON stack carries exactly; A-21 only reports what
// happens beyond that (see wideSample).
func jsonSafeSample(name string, d tensor.Datatype) tensor.Tensor {
	t := sample(name, d)
	switch d {
	case tensor.Int64:
		t.Data = []int64{-(1 << 53), -1, 0, 1, 1 << 40, 1 << 53}
	case tensor.Uint64:
		t.Data = []uint64{0, 1, 2, 1 << 40, 1<<53 - 1, 1 << 53}
	}
	return t
}

// wideSample is the [1,5] INT64 or UINT64 tensor of values beyond 2^53 that
// A-21 asks the suite to report on (not grade): the first integers a float64
// cannot hold (2^53+1, and 2^53+3 which rounds the other way) and the type's
// extremes.
func wideSample(name string, d tensor.Datatype) tensor.Tensor {
	t := tensor.Tensor{Name: name, Datatype: d, Shape: []int64{1, 5}}
	if d == tensor.Int64 {
		t.Data = []int64{math.MinInt64, -(1<<53 + 1), 1<<53 + 1, 1<<53 + 3, math.MaxInt64}
	} else {
		t.Data = []uint64{1<<53 + 1, 1<<53 + 3, 1<<63 + 1, math.MaxUint64 - 1, math.MaxUint64}
	}
	return t
}

// oddID is a request id with every kind of character a JSON string must
// escape or a naive server mangles: quotes, backslash, slash, control
// characters, NUL, U+2028, and characters of two, three and four bytes.
const oddID = "q\"b\\s/\n\t\x00\x1f\u2028é✓😀"

// int32s is an INT32 tensor with the given shape.
func int32s(name string, shape []int64, v ...int32) tensor.Tensor {
	return tensor.Tensor{Name: name, Datatype: tensor.Int32, Shape: shape, Data: v}
}

// identityOutput is what identity_<t> (and repo_target) must return for in.
func identityOutput(in tensor.Tensor) tensor.Tensor {
	return oracle(fixture.IdentityOutput(in))
}

// versionedOutput is what version v of versioned must return for in.
func versionedOutput(v int32, in tensor.Tensor) tensor.Tensor {
	return oracle(fixture.VersionedOutput(v, in))
}

// versionThatRan says which version of versioned (1 or 2) answered out
// for in; an error when out is the answer of neither.
func versionThatRan(in, out tensor.Tensor) (int32, error) {
	var why []string
	for _, v := range []int32{1, 2} {
		want := versionedOutput(v, in)
		err := CompareTensor(want, out)
		if err == nil {
			return v, nil
		}
		why = append(why, fmt.Sprintf("not version %d's (%s %v %v: %v)", v, want.Datatype, want.Shape, want.Data, err))
	}
	return 0, fmt.Errorf("OUTPUT0 %s %v %v is %s", out.Datatype, out.Shape, out.Data, strings.Join(why, ", "))
}

// oracle unwraps a fixture computation on the suite's own test values,
// which always fit the fixture: an error is a bug in the suite.
func oracle(t tensor.Tensor, err error) tensor.Tensor {
	if err != nil {
		panic(fmt.Sprintf("conformance: fixture oracle: %v", err))
	}
	return t
}

// renamed returns t under another name.
func renamed(t tensor.Tensor, name string) tensor.Tensor {
	t.Name = name
	return t
}

// addSubInputs are the add_sub inputs of catalog OIP-REST-INFER-001:
// INPUT0 = 0..15, INPUT1 = 1 (times 16), for a batch of n rows (row r adds
// 100*r to INPUT0, so rows are distinguishable).
func addSubInputs(n int) (in0, in1 tensor.Tensor) {
	a := make([]int32, 16*n)
	b := make([]int32, 16*n)
	for i := range a {
		a[i] = int32(i%16 + 100*(i/16))
		b[i] = 1
	}
	shape := []int64{int64(n), 16}
	return int32s("INPUT0", shape, a...), int32s("INPUT1", shape, b...)
}

// addSubOutputs computes what add_sub must return for its inputs.
func addSubOutputs(in0, in1 tensor.Tensor) (out0, out1 tensor.Tensor) {
	out0, out1, err := fixture.AddSubOutputs(in0, in1)
	oracle(out0, err)
	return out0, out1
}

// addSubRequest is the canonical add_sub JSON request (batch of one) and
// its expected outputs.
func addSubRequest() (Body, tensor.Tensor, tensor.Tensor) {
	in0, in1 := addSubInputs(1)
	out0, out1 := addSubOutputs(in0, in1)
	return Request(JSONInput(in0), JSONInput(in1)), out0, out1
}

// addSubWith returns an add_sub JSON body after mutate has changed it.
func addSubWith(mutate func(b Body)) func() []byte {
	return func() []byte {
		b, _, _ := addSubRequest()
		mutate(b)
		body, _ := b.Encode()
		return body
	}
}

// input0 returns add_sub's first input object of b.
func input0(b Body) Obj { return b.Inputs()[0] }

func literal(s string) func() []byte { return func() []byte { return []byte(s) } }

// addSubPB is the canonical add_sub gRPC request and its expected outputs.
func addSubPB(raw bool) (*pb.ModelInferRequest, tensor.Tensor, tensor.Tensor) {
	in0, in1 := addSubInputs(1)
	out0, out1 := addSubOutputs(in0, in1)
	return PBRequest("add_sub", raw, in0, in1), out0, out1
}

// addSubPBWith returns the typed (or raw) add_sub request after mutate.
func addSubPBWith(raw bool, mutate func(*pb.ModelInferRequest)) func() *pb.ModelInferRequest {
	return func() *pb.ModelInferRequest {
		req, _, _ := addSubPB(raw)
		mutate(req)
		return req
	}
}

// binaryRequest is a request whose inputs are all binary.
func binaryRequest(ts ...tensor.Tensor) Body {
	b := Body{JSON: Obj{"id": RequestID, "inputs": []any{}}}
	for _, t := range ts {
		addBinary(&b, t)
	}
	return b
}

// addBinary adds t as a binary input. The suite's own sample tensors always
// encode, so a failure is a bug in the suite.
func addBinary(b *Body, t tensor.Tensor) {
	if err := b.AddBinary(t); err != nil {
		panic(fmt.Sprintf("conformance: encode %s: %v", t.Name, err))
	}
}

// tensorMeta is one tensor of model metadata: name, datatype, shape.
type tensorMeta struct {
	name, datatype string
	shape          []int64
}

// The metadata of add_sub (fixture contract).
var (
	addSubMeta    = []tensorMeta{{"INPUT0", "INT32", []int64{-1, 16}}, {"INPUT1", "INT32", []int64{-1, 16}}}
	addSubOutMeta = []tensorMeta{{"OUTPUT0", "INT32", []int64{-1, 16}}, {"OUTPUT1", "INT32", []int64{-1, 16}}}
)

// needIdentity skips an extension spec that rides on identity_<d> when
// that core fixture is not deployed. The core specs already report the
// missing fixture (the core verdict is partial); the extension's own
// profile does not become inconclusive for one datatype it cannot try.
func needIdentity(d tensor.Datatype) {
	if !FixtureDeployed(identityFixture(d)) {
		ginkgo.Skip(SkipNotApplicable + identityFixture(d) + " is not deployed (a core fixture, reported by the core specs)")
	}
}
