package suite

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-EXT-BIN: the binary tensor data extension (REST).

// The probe sends add_sub's inputs as binary data and asks for JSON
// outputs: a server that reads the binary tail answers the sums, one that
// does not support the extension cannot parse the body. When the answer is
// not the sums, the same request in JSON decides: a server whose answers
// are wrong either way (a broken add_sub) still read the binary inputs if
// it answers them alike. Binary outputs are left to the specs, so that one
// broken detail of the extension (its response framing, say) is a finding
// of its requirement, not "the extension does not work".
var _ = RegisterProbe(specs.ExtBinaryTensorData, func(ctx context.Context, p *Prober) ProbeResult {
	if !p.Targeted(TransportREST) {
		return Inconclusive(nil, "REST is not targeted (the extension is REST only)")
	}
	if !p.Deployed("add_sub") {
		return Inconclusive(nil, "fixture add_sub is not deployed")
	}
	in0, in1 := addSubInputs(1)
	out0, out1 := addSubOutputs(in0, in1)
	e := p.Post(ctx, "add_sub", "", binaryRequest(in0, in1))
	switch {
	case e.Err != nil:
		return Inconclusive(e, "add_sub with binary inputs got no answer: %v", e.Err)
	case e.Status >= 500:
		return Inconclusive(e, "add_sub with binary inputs answered %d", e.Status)
	case e.Status != http.StatusOK:
		return Absent(e, "add_sub with binary inputs: %s", clipped(e.Got(), 160))
	}
	if ok, _ := HaveOutputs(out0, out1).Match(e); ok {
		return Observed(e, "add_sub with binary inputs answered the right sums")
	}
	j := p.Post(ctx, "add_sub", "", Request(JSONInput(in0), JSONInput(in1)))
	if sameOutputs(e, j) {
		return Observed(e, "add_sub with binary inputs answered as with JSON inputs")
	}
	return Absent(e, "add_sub with binary inputs: %s, unlike the same request in JSON", clipped(e.Got(), 160))
})

// sameOutputs reports whether two inference answers carry the same
// "outputs" JSON.
func sameOutputs(a, b *Exchange) bool {
	ra, err := a.AsInferResponse()
	if err != nil {
		return false
	}
	rb, err := b.AsInferResponse()
	if err != nil {
		return false
	}
	var oa, ob any
	return json.Unmarshal(ra.Top["outputs"], &oa) == nil && json.Unmarshal(rb.Top["outputs"], &ob) == nil && reflect.DeepEqual(oa, ob)
}

// binaryOutputs asks for every listed output as binary data.
func binaryOutputs(b Body, names ...string) {
	outs := []any{}
	for _, n := range names {
		outs = append(outs, Obj{"name": n, "parameters": Obj{oip.ParamBinaryData: true}})
	}
	b.JSON["outputs"] = outs
}

// binaryReq maps a datatype to the binary-extension requirement its raw form
// falls under.
func binaryReq(d tensor.Datatype) string {
	switch d {
	case tensor.Bool:
		return "OIP-EXT-BIN-003"
	case tensor.Bytes:
		return "OIP-EXT-BIN-004"
	case tensor.FP16, tensor.BF16:
		return "OIP-EXT-BIN-016"
	}
	return "OIP-EXT-BIN-002"
}

var _ = Describe("REST binary tensor data", Over(TransportREST), Needs(specs.ExtBinaryTensorData), func() {
	// The specs run when the server advertises the extension or the probe
	// observed it (or --features names it). A server that serves it but
	// does not list it breaks this MUST; the finding says what the probe
	// saw.
	It("advertises binary_tensor_data in server metadata", Req("OIP-EXT-BIN-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtBinaryTensorData)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtBinaryTensorData)
		}))
	})

	for _, d := range tensor.Datatypes {
		req := binaryReq(d)
		It(fmt.Sprintf("round-trips %s through identity as binary data, bit for bit", d), Req(req), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := sample("INPUT0", d)
			b := binaryRequest(in)
			binaryOutputs(b, "OUTPUT0")
			Verify(Post(ctx, identityFixture(d), "", b)).To(HaveOutputs(identityOutput(in)))
		})
	}

	for _, d := range tensor.Datatypes {
		req := binaryReq(d)
		It(fmt.Sprintf("round-trips a %d-element %s tensor of edge values through identity as binary data, bit for bit", hardRows*hardCols, d), Req(req), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			// No id: requests without one are as valid as requests with one.
			in := hardTensor("INPUT0", d, formBits)
			b := binaryRequest(in)
			binaryOutputs(b, "OUTPUT0")
			Verify(Post(ctx, identityFixture(d), "", b)).To(HaveOutputs(identityOutput(in)))
		})
	}

	for _, d := range []tensor.Datatype{tensor.FP32, tensor.Bytes} {
		It(fmt.Sprintf("answers binary %s tensors with a 0 dimension as empty binary outputs, or refuses them, never with a 5xx", d), Req("OIP-EXT-BIN-006", "OIP-REST-INFER-017", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			AfterNegative()
			for _, shape := range [][]int64{{1, 0}, {0, 3}} {
				in := emptyTensor("INPUT0", d, shape)
				b := binaryRequest(in)
				binaryOutputs(b, "OUTPUT0")
				e := Post(ctx, identityFixture(d), "", b)
				// empty tensors are informational; an answer must
				// still be the empty tensor, 0 bytes of binary data.
				emptyAnswer(e, identityOutput(in), "OIP-EXT-BIN-006", "OIP-REST-INFER-017")
				if e.Status == http.StatusOK {
					VerifyReq("OIP-EXT-BIN-006", e).To(PassCheck(func(r *InferResponse) error {
						if o := r.Output("OUTPUT0"); o != nil && o.BinSize > 0 {
							return fmt.Errorf("OUTPUT0 of shape %v has binary_data_size %d, want 0", o.Shape, o.BinSize)
						}
						return nil
					}))
				}
			}
		})
	}

	It("reads little-endian, row-major binary input", Req("OIP-EXT-BIN-002"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		raw := binary.LittleEndian.AppendUint32(nil, 1)
		for _, v := range []uint32{2, 3, 4} {
			raw = binary.LittleEndian.AppendUint32(raw, v)
		}
		b := Body{JSON: Obj{"id": RequestID, "inputs": []any{Obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{2, 2},
			"parameters": Obj{oip.ParamBinaryDataSize: 16}}}}, Bin: [][]byte{raw}}
		// Binary output too, so that only the binary encoding is tested
		// here (JSON output is OIP-REST-DATA-*).
		binaryOutputs(b, "OUTPUT0")
		Verify(Post(ctx, "identity_int32", "", b)).To(HaveOutputs(identityOutput(int32s("INPUT0", []int64{2, 2}, 1, 2, 3, 4))))
	})

	It("reads BOOL binary elements as 0x01 and 0x00", Req("OIP-EXT-BIN-003"), func(ctx SpecContext) {
		NeedFixture("identity_bool")
		b := Body{JSON: Obj{"id": RequestID, "inputs": []any{Obj{"name": "INPUT0", "datatype": "BOOL", "shape": []int{1, 3},
			"parameters": Obj{oip.ParamBinaryDataSize: 3}}}}, Bin: [][]byte{{1, 0, 1}}}
		// Binary output too: BOOL in JSON is only implied (OIP-REST-DATA-006)
		// and must not be graded here as this MUST.
		binaryOutputs(b, "OUTPUT0")
		Verify(Post(ctx, "identity_bool", "", b)).To(HaveBinaryBytes("OUTPUT0", []byte{1, 0, 1}))
	})

	It("reads and writes BYTES binary elements with a 4-byte little-endian length", Req("OIP-EXT-BIN-004"), func(ctx SpecContext) {
		NeedFixture("identity_bytes")
		b := Body{JSON: Obj{"id": RequestID, "inputs": []any{Obj{"name": "INPUT0", "datatype": "BYTES", "shape": []int{1, 1},
			"parameters": Obj{oip.ParamBinaryDataSize: 6}}}}, Bin: [][]byte{{2, 0, 0, 0, 'h', 'i'}}}
		binaryOutputs(b, "OUTPUT0")
		Verify(Post(ctx, "identity_bytes", "", b)).To(HaveBinaryBytes("OUTPUT0", []byte("\x02\x00\x00\x00hi")))
	})

	It("assigns binary buffers to inputs in the order of the JSON inputs", Req("OIP-EXT-BIN-005"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		in0, in1 := addSubInputs(1)
		// INPUT1 is listed first, so the first buffer must be INPUT1's.
		b := binaryRequest(in1, in0)
		out0, out1 := addSubOutputs(in0, in1)
		Verify(Post(ctx, "add_sub", "", b)).To(HaveOutputs(out0, out1))
	})

	It("gives each binary output its binary_data_size", Req("OIP-EXT-BIN-006"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		in0, in1 := addSubInputs(1)
		b := binaryRequest(in0, in1)
		binaryOutputs(b, "OUTPUT0", "OUTPUT1")
		// 16 INT32 each.
		Verify(Post(ctx, "add_sub", "", b)).To(All(HaveBinaryDataSize("OUTPUT0", 64), HaveBinaryDataSize("OUTPUT1", 64)))
	})

	It("returns an output as binary only when binary_data is true", Req("OIP-EXT-BIN-007"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		b, out0, out1 := addSubRequest()
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": Obj{oip.ParamBinaryData: true}}, Obj{"name": "OUTPUT1"}}
		Verify(Post(ctx, "add_sub", "", b)).To(All(
			HaveBinaryOutput("OUTPUT0", true), HaveBinaryOutput("OUTPUT1", false), HaveOutputs(out0, out1)))
	})

	It("returns every output as binary with binary_data_output unless an output overrides it", Req("OIP-EXT-BIN-008"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		b, out0, out1 := addSubRequest()
		b.JSON["parameters"] = Obj{oip.ParamBinaryDataOutput: true}
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0"}, Obj{"name": "OUTPUT1", "parameters": Obj{oip.ParamBinaryData: false}}}
		Verify(Post(ctx, "add_sub", "", b)).To(All(
			HaveBinaryOutput("OUTPUT0", true), HaveBinaryOutput("OUTPUT1", false), HaveOutputs(out0, out1)))
	})

	It("frames a binary response with Inference-Header-Content-Length and Content-Length", Req("OIP-EXT-BIN-009"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		in0, in1 := addSubInputs(1)
		b := binaryRequest(in0, in1)
		binaryOutputs(b, "OUTPUT0", "OUTPUT1")
		Verify(Post(ctx, "add_sub", "", b)).To(HaveBinaryFraming())
	})

	It("omits data and sends binary_data_size on binary outputs", Req("OIP-EXT-BIN-012"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		b, _, _ := addSubRequest()
		binaryOutputs(b, "OUTPUT0")
		Verify(Post(ctx, "add_sub", "", b)).To(HaveBinaryOutput("OUTPUT0", true))
	})

	It("records the Content-Type of binary responses", Req("OIP-EXT-BIN-013"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		b, _, _ := addSubRequest()
		binaryOutputs(b, "OUTPUT0")
		e := Post(ctx, "add_sub", "", b)
		if Verify(e).To(HaveStatus(http.StatusOK)) {
			Note("OIP-EXT-BIN-013", "binary response Content-Type %q", e.Header.Get("Content-Type"))
		}
	})

	It("accepts JSON and binary inputs in one request", Req("OIP-EXT-BIN-015"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		in0, in1 := addSubInputs(1)
		out0, out1 := addSubOutputs(in0, in1)
		b := Request(JSONInput(in0))
		addBinary(&b, in1)
		Verify(Post(ctx, "add_sub", "", b)).To(HaveOutputs(out0, out1))
	})
})

var _ = Describe("REST binary tensor data errors", Over(TransportREST), Needs(specs.ExtBinaryTensorData), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	// body returns add_sub with both inputs binary and its JSON length.
	body := func() ([]byte, int) {
		in0, in1 := addSubInputs(1)
		return binaryRequest(in0, in1).Encode()
	}
	octet := func(hl string) http.Header {
		h := http.Header{"Content-Type": {"application/octet-stream"}}
		if hl != "" {
			h.Set(oip.HeaderInferenceHeaderContentLength, hl)
		}
		return h
	}
	cases := []struct {
		text, req string
		build     func() (http.Header, []byte)
	}{
		{"binary data without Inference-Header-Content-Length", "OIP-EXT-BIN-009", func() (http.Header, []byte) {
			b, _ := body()
			return octet(""), b
		}},
		{"an Inference-Header-Content-Length larger than the body", "OIP-EXT-BIN-009", func() (http.Header, []byte) {
			b, _ := body()
			return octet(strconv.Itoa(len(b) + 10)), b
		}},
		{"binary data one byte short", "OIP-EXT-BIN-011", func() (http.Header, []byte) {
			b, hl := body()
			return octet(strconv.Itoa(hl)), b[:len(b)-1]
		}},
		{"one extra byte of binary data", "OIP-EXT-BIN-011", func() (http.Header, []byte) {
			b, hl := body()
			return octet(strconv.Itoa(hl)), append(b, 0)
		}},
		{"an input with both data and binary_data_size", "OIP-EXT-BIN-010", func() (http.Header, []byte) {
			in0, in1 := addSubInputs(1)
			rb := binaryRequest(in0, in1)
			rb.Inputs()[0]["data"] = JSONValues(in0)
			b, hl := rb.Encode()
			return octet(strconv.Itoa(hl)), b
		}},
	}
	for _, c := range cases {
		It("rejects "+c.text, Req(c.req, "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			AfterNegative()
			h, b := c.build()
			rejects(PostRaw(ctx, "add_sub", h, b), c.req, "OIP-REST-ERR-001", rejection{})
		})
	}
})
