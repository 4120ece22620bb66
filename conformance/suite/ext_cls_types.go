package suite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-EXT-CLS over every output datatype (issue 24 item 2). The extension
// applies to any requested output, so identity_<dtype> classifies its own
// input: a [1, 6] row whose order by the datatype's own comparison differs
// from the order a server gets by comparing through float64 (or float32),
// or by reading unsigned as signed and signed as unsigned. Each row is
// asked for its top 3 and for all 6 classes.
//
// Grading, from the clause ("the n highest-valued elements, compared using
// the output's datatype, in descending order", each "<value>:<index>"):
//   - OIP-EXT-CLS-003: BYTES (or STRING), shape [1, count] or [count].
//   - OIP-EXT-CLS-004: the indexes name the count highest elements of the
//     row, highest first, in the datatype's order. Equal values are not
//     ordered by the clause: either index order passes (the INT32 tie spec).
//   - OIP-EXT-CLS-005: each value is the element's. The formatting is
//     unspecified, so any decimal text that denotes the element passes
//     ("127", "127.000000", "1.27e2"); for integers it must denote it
//     exactly — 18446744073709551615 printed as 1.8446744e+19 names another
//     number, and the clause asks for the element's value. Floats are
//     checked within the datatype's precision, or to the 6 decimals of
//     Triton's std::to_string (the extension's own implementation).
//     identity_<dtype> has no labels, so no label may follow.
//
// Over REST JSON, 64-bit integers stay within ±2^53 (A-21 is reported,
// not graded, elsewhere) and FP16/BF16 have no JSON form: the
// values beyond 2^53 and the half floats go as binary data, where the
// server has that extension, and over gRPC.
//
// The specs are in ext_cls.go, the group's file; the rows and the grading
// are here.

// clsTypeCounts are the class counts asked of each row: the top 3, and the
// whole row.
var clsTypeCounts = []int{3, 6}

// clsTypeRow is the [1, 6] row classified for datatype d; wide is false
// for JSON, whose 64-bit integers stay within ±2^53.
func clsTypeRow(d tensor.Datatype, wide bool) tensor.Tensor {
	var data any
	switch d {
	// Signed: max at 1 and max-1 at 3 (a float32 comparison ties them
	// for INT32, and only a lower-index-first tie break then answers
	// right); min and -1 are the largest if read as unsigned, so a
	// server doing that answers [2 0 1] for the top 3 instead of [1 3 5].
	case tensor.Int8:
		data = []int8{math.MinInt8, math.MaxInt8, -1, math.MaxInt8 - 1, 0, 1}
	case tensor.Int16:
		data = []int16{math.MinInt16, math.MaxInt16, -1, math.MaxInt16 - 1, 0, 1}
	case tensor.Int32:
		data = []int32{math.MinInt32, math.MaxInt32, -1, math.MaxInt32 - 1, 0, 1}
	// Unsigned: max and max-1 first, then the top bit alone (2^(n-1)):
	// read as signed they are -1, -2 and the minimum, so a server doing
	// that answers [4 5 1] (2^(n-1)-1, 1, 0) instead of [0 3 2].
	case tensor.Uint8:
		data = []uint8{math.MaxUint8, 0, 1 << 7, math.MaxUint8 - 1, 1<<7 - 1, 1}
	case tensor.Uint16:
		data = []uint16{math.MaxUint16, 0, 1 << 15, math.MaxUint16 - 1, 1<<15 - 1, 1}
	case tensor.Uint32:
		data = []uint32{math.MaxUint32, 0, 1 << 31, math.MaxUint32 - 1, 1<<31 - 1, 1}
	case tensor.Int64:
		if !wide {
			// ±2^53 and 2^53-1, exact in JSON; -1 and -(2^53) are
			// the largest read as unsigned: [4 0 1] instead of [1 2 3].
			data = []int64{-(1 << 53), 1 << 53, 1<<53 - 1, 1, -1, 0}
			break
		}
		// Two pairs float64 cannot tell apart: max and max-1 (both 2^63)
		// with the larger first, 2^53 and 2^53+1 (both 2^53) with the
		// larger last. A float64 comparison ties each pair, and either
		// tie break misorders one of them within the top 3: [1 2 0]
		// (lower index first) or [2 1 5] (higher first) instead of
		// [1 2 5]. min and -1 are the largest read as unsigned: [4 3 1].
		data = []int64{1 << 53, math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, -1, 1<<53 + 1}
	case tensor.Uint64:
		if !wide {
			// 2^53, 2^53-1 and 2^40, exact in JSON.
			data = []uint64{1 << 53, 0, 1<<53 - 1, 1, 2, 1 << 40}
			break
		}
		// As INT64: max and max-1 (both 2^64 as float64) larger first,
		// 2^63 and 2^63+1 (both 2^63) larger last, so either float64 tie
		// break misorders the top 3; max, max-1 and 2^63 are negative
		// read as signed: [3 4 1] instead of [1 2 5].
		data = []uint64{1 << 63, math.MaxUint64, math.MaxUint64 - 1, 1, 0, 1<<63 + 1}
	// Floats: the extremes and a negative beyond -1. Compared as their
	// bits read unsigned, the negatives come first; -max above -1.5
	// shows bits read signed (whole row).
	case tensor.FP16:
		data = []tensor.Float16{0xbe00, 0x7bff, 0x3400, 0xfbff, 0x1419, 0x4100} // -1.5 65504 0.25 -65504 0.0010004 2.5
	case tensor.BF16:
		data = []tensor.BFloat16{0xbfc0, 0x7f7f, 0x3e80, 0xff7f, 0x3a83, 0x4020} // -1.5 max 0.25 -max 0.00099945 2.5
	case tensor.FP32:
		data = []float32{-1.5, math.MaxFloat32, 0.25, -math.MaxFloat32, 0.001, 2.5}
	case tensor.FP64:
		// 1e300 and max are both +Inf in float32, the larger last, so a
		// float32 comparison with a lower-index-first tie break answers
		// [1 5 2] instead of [5 1 2].
		data = []float64{-1.5, 1e300, 0.25, -math.MaxFloat64, 0.001, math.MaxFloat64}
	default:
		panic(fmt.Sprintf("conformance: no classification row for %s", d))
	}
	return tensor.Tensor{Name: "INPUT0", Datatype: d, Shape: []int64{1, 6}, Data: data}
}

// clsTieRow is the one tie case (INT32): 7 at 1 and at 3 are the top two,
// in either order, then 3 at 0.
func clsTieRow() tensor.Tensor {
	return tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1, 6}, Data: []int32{3, 7, -1, 7, 0, 1}}
}

// clsNumeric are the datatypes whose order the clause defines.
var clsNumeric = []tensor.Datatype{tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64,
	tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64, tensor.FP16, tensor.FP32, tensor.FP64, tensor.BF16}

// clsExact are the elements of a numeric row as exact numbers (every
// integer and finite float is one), for comparing in the datatype's order.
func clsExact(t tensor.Tensor) []*big.Rat {
	var out []*big.Rat
	add := func(r *big.Rat) { out = append(out, r) }
	switch v := t.Data.(type) {
	case []int8:
		for _, x := range v {
			add(new(big.Rat).SetInt64(int64(x)))
		}
	case []int16:
		for _, x := range v {
			add(new(big.Rat).SetInt64(int64(x)))
		}
	case []int32:
		for _, x := range v {
			add(new(big.Rat).SetInt64(int64(x)))
		}
	case []int64:
		for _, x := range v {
			add(new(big.Rat).SetInt64(x))
		}
	case []uint8:
		for _, x := range v {
			add(new(big.Rat).SetUint64(uint64(x)))
		}
	case []uint16:
		for _, x := range v {
			add(new(big.Rat).SetUint64(uint64(x)))
		}
	case []uint32:
		for _, x := range v {
			add(new(big.Rat).SetUint64(uint64(x)))
		}
	case []uint64:
		for _, x := range v {
			add(new(big.Rat).SetUint64(x))
		}
	case []tensor.Float16:
		for _, x := range v {
			add(new(big.Rat).SetFloat64(float64(x.Float32())))
		}
	case []tensor.BFloat16:
		for _, x := range v {
			add(new(big.Rat).SetFloat64(float64(x.Float32())))
		}
	case []float32:
		for _, x := range v {
			add(new(big.Rat).SetFloat64(float64(x)))
		}
	case []float64:
		for _, x := range v {
			add(new(big.Rat).SetFloat64(x))
		}
	case []bool:
		// false < true, the only order a boolean has.
		for _, x := range v {
			add(new(big.Rat).SetInt64(map[bool]int64{false: 0, true: 1}[x]))
		}
	default:
		panic(fmt.Sprintf("conformance: no order for %s", t.Datatype))
	}
	return out
}

// clsPrecision is the relative precision of a float datatype (half an ulp
// at most off, after rounding to a shorter decimal); 0 for integers.
func clsPrecision(d tensor.Datatype) float64 {
	switch d {
	case tensor.FP16:
		return 0x1p-10
	case tensor.BF16:
		return 0x1p-7
	case tensor.FP32:
		return 0x1p-23
	case tensor.FP64:
		return 0x1p-52
	}
	return 0
}

// clsEntry is one result string split into its parts.
type clsEntry struct {
	value, label string
	index        int
}

// clsEntries splits the result strings; the error names the first
// malformed one (OIP-EXT-CLS-005's finding).
func clsEntries(r clsResult) (out []clsEntry, err error) {
	for i, s := range r.strings {
		m := clsPattern.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("class %d is %q, want \"<value>:<index>\"", i, s)
		}
		idx, err := strconv.Atoi(m[2])
		if err != nil {
			return nil, fmt.Errorf("class %d is %q: the index %q is not an integer", i, s, m[2])
		}
		out = append(out, clsEntry{m[1], m[3], idx})
	}
	return out, nil
}

// clsShapeErr checks OIP-EXT-CLS-003 for a [1, 6] row: count strings, shape
// [1, count] or [count].
func clsShapeErr(r clsResult, count int) error {
	if len(r.strings) != count {
		return fmt.Errorf("%d classes %q, want the %d asked for", len(r.strings), r.strings, count)
	}
	if !slices.Equal(r.shape, []int64{1, int64(count)}) && !slices.Equal(r.shape, []int64{int64(count)}) {
		return fmt.Errorf("shape %v, want [1 %d] (or [%d])", r.shape, count, count)
	}
	return nil
}

// clsOrderErr checks OIP-EXT-CLS-004: the indexes name distinct elements,
// highest first in the datatype's order, none left out higher than the
// lowest named. Equal elements may come in either order.
func clsOrderErr(r clsResult, in tensor.Tensor) error {
	got, err := clsEntries(r)
	if err != nil {
		return nil // malformed: OIP-EXT-CLS-005's finding
	}
	vals := clsExact(in)
	var idx []int
	for _, c := range got {
		idx = append(idx, c.index)
	}
	bad := func(why string) error {
		return fmt.Errorf("indexes %v (%q) of %s row %v: %s", idx, r.strings, in.Datatype, in.Data, why)
	}
	seen := map[int]bool{}
	for i, c := range got {
		if c.index < 0 || c.index >= len(vals) {
			return bad(fmt.Sprintf("index %d is outside the row of %d", c.index, len(vals)))
		}
		if seen[c.index] {
			return bad(fmt.Sprintf("index %d is named twice", c.index))
		}
		seen[c.index] = true
		if i > 0 && vals[idx[i-1]].Cmp(vals[c.index]) < 0 {
			return bad(fmt.Sprintf("element %d follows the smaller element %d: want highest first", c.index, idx[i-1]))
		}
	}
	if len(idx) == 0 {
		return nil
	}
	low := vals[idx[len(idx)-1]]
	for j, v := range vals {
		if !seen[j] && v.Cmp(low) > 0 {
			return bad(fmt.Sprintf("element %d, higher than element %d, is left out", j, idx[len(idx)-1]))
		}
	}
	return nil
}

// clsValueErr checks OIP-EXT-CLS-005: each string well formed, with no
// label (identity has none), its value the element's: exactly for
// integers, within the datatype's precision or 6 decimals for floats.
func clsValueErr(r clsResult, in tensor.Tensor) error {
	got, err := clsEntries(r)
	if err != nil {
		return err
	}
	vals := clsExact(in)
	prec := clsPrecision(in.Datatype)
	var list []error
	for i, c := range got {
		if c.label != "" {
			list = append(list, fmt.Errorf("class %d (%q): label %q, but %s has no labels", i, r.strings[i], c.label, in.Datatype))
		}
		if c.index < 0 || c.index >= len(vals) {
			continue // OIP-EXT-CLS-004's finding
		}
		want := vals[c.index]
		if prec == 0 {
			v, ok := new(big.Rat).SetString(c.value)
			if !ok || v.Cmp(want) != 0 {
				list = append(list, fmt.Errorf("class %d (%q): value %q is not element %d, %s", i, r.strings[i], c.value, c.index, want.RatString()))
			}
			continue
		}
		v, err := strconv.ParseFloat(c.value, 64)
		w, _ := want.Float64()
		if err != nil || math.IsNaN(v) || math.Abs(v-w) > math.Max(prec*math.Abs(w), 5e-7) {
			list = append(list, fmt.Errorf("class %d (%q): value %q is not element %d, %v (within %s precision)", i, r.strings[i], c.value, c.index, w, in.Datatype))
		}
	}
	return errors.Join(list...)
}

// clsTypeBody is the REST request: OUTPUT0 of in's identity with
// classification count; binary sends in as binary data.
func clsTypeBody(in tensor.Tensor, count int, binary bool) Body {
	b := Request(JSONInput(in))
	if binary {
		b = binaryRequest(in)
	}
	b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": Obj{"classification": count}}}
	return b
}

// clsTypePB is the gRPC request: raw contents for the half floats, which
// have no typed field, typed contents otherwise.
func clsTypePB(in tensor.Tensor, count int) *pb.ModelInferRequest {
	raw := in.Datatype == tensor.FP16 || in.Datatype == tensor.BF16
	req := PBRequest(identityFixture(in.Datatype), raw, in)
	req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0",
		Parameters: map[string]*pb.InferParameter{"classification": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: int64(count)}}}}}
	return req
}

// clsTypeREST asks identity for the classes of in and grades the answers.
func clsTypeREST(ctx context.Context, in tensor.Tensor, binary bool) {
	needClassification()
	for _, count := range clsTypeCounts {
		e := Post(ctx, identityFixture(in.Datatype), "", clsTypeBody(in, count, binary))
		clsTypeVerify(e, count, in, clsReading(clsREST))
	}
}

// clsTypeGRPC is clsTypeREST over gRPC.
func clsTypeGRPC(ctx context.Context, in tensor.Tensor) {
	needClassification()
	for _, count := range clsTypeCounts {
		_, c := Infer(ctx, clsTypePB(in, count))
		clsTypeVerify(c, count, in, clsReading(clsGRPCFramed))
	}
}

// errRawFraming is a BYTES result in raw_output_contents that does not
// frame as length-prefixed strings: the raw framing's finding
// (OIP-GRPC-RAW-*), checked with the raw specs, not charged again here.
var errRawFraming = errors.New("raw BYTES framing")

// clsGRPCFramed is clsGRPC, telling a raw BYTES answer that does not frame
// apart (errRawFraming).
func clsGRPCFramed(resp *pb.ModelInferResponse) (clsResult, error) {
	r, err := clsGRPC(resp)
	if err != nil && len(resp.GetRawOutputContents()) > 0 {
		for _, o := range resp.GetOutputs() {
			if o.GetName() == "OUTPUT0" && (o.GetDatatype() == string(tensor.Bytes) || o.GetDatatype() == "STRING") {
				return r, errRawFraming
			}
		}
	}
	return r, err
}

// clsReading turns a check of the result into a check of an answer. A
// result that does not decode as strings is OIP-EXT-CLS-003's finding
// alone (one defect, one failure): the other checks pass it.
func clsReading[T any](decode func(T) (clsResult, error)) func(func(clsResult) error, bool) func(T) error {
	return func(f func(clsResult) error, decodeFails bool) func(T) error {
		return func(x T) error {
			r, err := decode(x)
			if err != nil {
				if decodeFails && !errors.Is(err, errRawFraming) {
					return err
				}
				return nil
			}
			return f(r)
		}
	}
}

// clsTypeVerify runs the three checks on one answer x.
func clsTypeVerify[T any](x Evidencer, count int, in tensor.Tensor, read func(func(clsResult) error, bool) func(T) error) {
	VerifyReq("OIP-EXT-CLS-003", x).To(PassCheck(read(func(r clsResult) error { return clsShapeErr(r, count) }, true)), fmt.Sprintf("classification %d of %s", count, in.Datatype))
	// No classification result at all (a refusal, a fault) is the one
	// finding above, not three: order and values are read from a result.
	if !succeeded(x) {
		return
	}
	VerifyReq("OIP-EXT-CLS-004", x).To(PassCheck(read(func(r clsResult) error { return clsOrderErr(r, in) }, false)), fmt.Sprintf("classification %d of %s", count, in.Datatype))
	VerifyReq("OIP-EXT-CLS-005", x).To(PassCheck(read(func(r clsResult) error { return clsValueErr(r, in) }, false)), fmt.Sprintf("classification %d of %s", count, in.Datatype))
}

// clsUnorderedREST grades classification of a BOOL or BYTES output
// (OIP-EXT-CLS-004): a refusal passes, a 5xx fails. An answer is noted;
// for BOOL it must also follow false < true, the only order a boolean has
// (an answer claims that order; the clause's "highest-valued" gives no
// other).
func clsUnorderedREST(ctx context.Context, d tensor.Datatype) {
	needClassification()
	in := sample("INPUT0", d)
	e := Post(ctx, identityFixture(d), "", clsTypeBody(in, 3, false))
	if !Answered(e) {
		return
	}
	if e.Status == http.StatusOK {
		Note("OIP-EXT-CLS-004", "classification 3 of a %s output answered: %s", d, clipped(e.Got(), 200))
		if d == tensor.Bool {
			Verify(e).To(PassCheck(func(e *Exchange) error {
				r, err := clsREST(e)
				if err != nil {
					// No classes to order: the answer's other
					// defects are graded by the inference specs.
					Note("OIP-EXT-CLS-004", "classification 3 of BOOL: %v", err)
					return nil
				}
				return clsOrderErr(clsBoolText(r), in)
			}))
		}
		return
	}
	Verify(e).To(BeRejected())
}

// clsUnorderedGRPC is clsUnorderedREST over gRPC.
func clsUnorderedGRPC(ctx context.Context, d tensor.Datatype) {
	needClassification()
	in := sample("INPUT0", d)
	_, c := Infer(ctx, clsTypePB(in, 3))
	if !Answered(c) {
		return
	}
	if c.Err == nil {
		Note("OIP-EXT-CLS-004", "classification 3 of a %s output answered: %s", d, clipped(c.Got(), 200))
		if d == tensor.Bool {
			Verify(c).To(PassCheck(func(resp *pb.ModelInferResponse) error {
				r, err := clsGRPC(resp)
				if err != nil {
					// No classes to order: the answer's other
					// defects are graded by the inference specs.
					Note("OIP-EXT-CLS-004", "classification 3 of BOOL: %v", err)
					return nil
				}
				return clsOrderErr(clsBoolText(r), in)
			}))
		}
		return
	}
	Verify(c).To(BeRejected())
}

// clsBoolText reads "true"/"false" values as 1/0; only the indexes are
// graded.
func clsBoolText(r clsResult) clsResult {
	out := clsResult{shape: r.shape}
	for _, s := range r.strings {
		out.strings = append(out.strings, strings.NewReplacer("true", "1", "false", "0").Replace(s))
	}
	return out
}

// needClassification skips a spec on the identity fixtures unless the
// server advertises classification or deploys the classifier, its fixture:
// a server that shows neither (its probe inconclusive) would otherwise be
// charged here with the extension's absence, or with the identity model's
// own defects, under classification requirements.
func needClassification() {
	if !Advertises(specs.ExtClassification) && !FixtureDeployed("classifier") {
		Skip(SkipFixture + "classifier (classification is not advertised, so the every-datatype specs wait for the classifier to show it)")
	}
}
