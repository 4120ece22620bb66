package conformance

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	. "github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// binaryRequest is a request whose inputs are all binary.
func binaryRequest(ts ...tensor.Tensor) restBody {
	b := restBody{json: obj{"inputs": []any{}}}
	for _, t := range ts {
		addBinary(&b, t)
	}
	return b
}

// addBinary adds t as a binary input. The suite's own sample tensors always
// encode, so a failure is a bug in the suite.
func addBinary(b *restBody, t tensor.Tensor) {
	if err := b.binaryInput(t); err != nil {
		panic(fmt.Sprintf("conformance: encode %s: %v", t.Name, err))
	}
}

// binaryOutputs asks for every listed output as binary data.
func binaryOutputs(b restBody, names ...string) {
	outs := []any{}
	for _, n := range names {
		outs = append(outs, obj{"name": n, "parameters": obj{oip.ParamBinaryData: true}})
	}
	b.json["outputs"] = outs
}

// binaryFraming checks a binary response's framing (OIP-EXT-BIN-009):
// Inference-Header-Content-Length is the JSON length and Content-Length (the
// body) is that plus the outputs' binary_data_size.
func binaryFraming(r *inferResult) error {
	e := r.ex
	if e.header.Get(oip.HeaderInferenceHeaderContentLength) == "" {
		return fmt.Errorf("response carries binary outputs but no %s header", oip.HeaderInferenceHeaderContentLength)
	}
	if err := errs(r.framing, r.slicing); err != nil {
		return err
	}
	var sum int64
	for _, o := range r.outputs {
		if o.binSize > 0 {
			sum += o.binSize
		}
	}
	if want := int64(len(r.jsonPart)) + sum; int64(len(e.body)) != want {
		return fmt.Errorf("body is %d bytes, want JSON %d + binary_data_size %d = %d", len(e.body), len(r.jsonPart), sum, want)
	}
	if cl := e.header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(e.body)) {
		return fmt.Errorf("Content-Length is %s but the body is %d bytes", cl, len(e.body))
	}
	return nil
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

var _ = Describe("REST binary tensor data", Over(TransportREST), Needs(FeatureBinaryTensorData), func() {
	It("advertises binary_tensor_data in server metadata", Req("OIP-EXT-BIN-001"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2")
		m, err := e.jsonObject()
		if err == nil {
			exts, xerr := extensionsField(m)
			if err = xerr; err == nil && !slices.Contains(exts, string(FeatureBinaryTensorData)) {
				err = fmt.Errorf("extensions %q do not include %q, yet the run treats the extension as supported (%s)", exts, FeatureBinaryTensorData, tgt.featureSource)
			}
		}
		grade(on("OIP-EXT-BIN-001", e, err))
	})

	for _, d := range tensor.Datatypes {
		req := binaryReq(d)
		It(fmt.Sprintf("round-trips %s through identity as binary data, bit for bit", d), Req(req), func(ctx SpecContext) {
			needFixture(identityFixture(d))
			in := sample("INPUT0", d)
			b := binaryRequest(in)
			binaryOutputs(b, "OUTPUT0")
			e, r, err := tgt.inferOK(ctx, identityFixture(d), "", b)
			if err == nil {
				err = r.expect(true, renamed(in, "OUTPUT0"))
			}
			grade(on(req, e, err))
		})
	}

	It("reads little-endian, row-major binary input", Req("OIP-EXT-BIN-002"), func(ctx SpecContext) {
		needFixture("identity_int32")
		raw := binary.LittleEndian.AppendUint32(nil, 1)
		for _, v := range []uint32{2, 3, 4} {
			raw = binary.LittleEndian.AppendUint32(raw, v)
		}
		b := restBody{json: obj{"inputs": []any{obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{2, 2},
			"parameters": obj{oip.ParamBinaryDataSize: 16}}}}, bin: [][]byte{raw}}
		// Binary output too, so that only the binary encoding is tested
		// here (JSON output is OIP-REST-DATA-*).
		binaryOutputs(b, "OUTPUT0")
		e, r, err := tgt.inferOK(ctx, "identity_int32", "", b)
		if err == nil {
			err = r.expect(true, int32s("OUTPUT0", []int64{2, 2}, 1, 2, 3, 4))
		}
		grade(on("OIP-EXT-BIN-002", e, err))
	})

	It("reads BOOL binary elements as 0x01 and 0x00", Req("OIP-EXT-BIN-003"), func(ctx SpecContext) {
		needFixture("identity_bool")
		b := restBody{json: obj{"inputs": []any{obj{"name": "INPUT0", "datatype": "BOOL", "shape": []int{1, 3},
			"parameters": obj{oip.ParamBinaryDataSize: 3}}}}, bin: [][]byte{{1, 0, 1}}}
		// Binary output too: BOOL in JSON is only implied (OIP-REST-DATA-006)
		// and must not be graded here as this MUST.
		binaryOutputs(b, "OUTPUT0")
		e, r, err := tgt.inferOK(ctx, "identity_bool", "", b)
		if err == nil {
			o := r.output("OUTPUT0")
			switch {
			case o == nil:
				err = fmt.Errorf("OUTPUT0 is missing (outputs: %v)", r.names())
			case o.binSize < 0:
				err = fmt.Errorf("OUTPUT0 was asked for as binary but has no binary_data_size")
			case string(o.bin) != "\x01\x00\x01":
				err = fmt.Errorf("OUTPUT0 binary data is %x, want 010001", o.bin)
			}
		}
		grade(on("OIP-EXT-BIN-003", e, err))
	})

	It("reads and writes BYTES binary elements with a 4-byte little-endian length", Req("OIP-EXT-BIN-004"), func(ctx SpecContext) {
		needFixture("identity_bytes")
		b := restBody{json: obj{"inputs": []any{obj{"name": "INPUT0", "datatype": "BYTES", "shape": []int{1, 1},
			"parameters": obj{oip.ParamBinaryDataSize: 6}}}}, bin: [][]byte{{2, 0, 0, 0, 'h', 'i'}}}
		binaryOutputs(b, "OUTPUT0")
		e, r, err := tgt.inferOK(ctx, "identity_bytes", "", b)
		if err == nil {
			o := r.output("OUTPUT0")
			switch {
			case o == nil:
				err = fmt.Errorf("OUTPUT0 is missing (outputs: %v)", r.names())
			case string(o.bin) != "\x02\x00\x00\x00hi":
				err = fmt.Errorf("OUTPUT0 binary data is %x, want 020000006869", o.bin)
			}
		}
		grade(on("OIP-EXT-BIN-004", e, err))
	})

	It("assigns binary buffers to inputs in the order of the JSON inputs", Req("OIP-EXT-BIN-005"), func(ctx SpecContext) {
		needFixture("add_sub")
		in0, in1 := addSubInputs(1)
		// INPUT1 is listed first, so the first buffer must be INPUT1's.
		b := binaryRequest(in1, in0)
		out0, out1 := addSubOutputs(in0, in1)
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = r.expect(true, out0, out1)
		}
		grade(on("OIP-EXT-BIN-005", e, err))
	})

	It("gives each binary output its binary_data_size", Req("OIP-EXT-BIN-006"), func(ctx SpecContext) {
		needFixture("add_sub")
		in0, in1 := addSubInputs(1)
		b := binaryRequest(in0, in1)
		binaryOutputs(b, "OUTPUT0", "OUTPUT1")
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			for _, n := range []string{"OUTPUT0", "OUTPUT1"} {
				if o := r.output(n); o == nil || o.binSize != 64 {
					err = errs(err, fmt.Errorf("output %q: binary_data_size %v, want 64 (16 INT32)", n, binSizeOf(o)))
				}
			}
		}
		grade(on("OIP-EXT-BIN-006", e, err))
	})

	It("returns an output as binary only when binary_data is true", Req("OIP-EXT-BIN-007"), func(ctx SpecContext) {
		needFixture("add_sub")
		b, out0, out1 := addSubRequest()
		b.json["outputs"] = []any{obj{"name": "OUTPUT0", "parameters": obj{oip.ParamBinaryData: true}}, obj{"name": "OUTPUT1"}}
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = errs(wantBinary(r, "OUTPUT0", true), wantBinary(r, "OUTPUT1", false), r.expect(true, out0, out1))
		}
		grade(on("OIP-EXT-BIN-007", e, err))
	})

	It("returns every output as binary with binary_data_output unless an output overrides it", Req("OIP-EXT-BIN-008"), func(ctx SpecContext) {
		needFixture("add_sub")
		b, out0, out1 := addSubRequest()
		b.json["parameters"] = obj{oip.ParamBinaryDataOutput: true}
		b.json["outputs"] = []any{obj{"name": "OUTPUT0"}, obj{"name": "OUTPUT1", "parameters": obj{oip.ParamBinaryData: false}}}
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = errs(wantBinary(r, "OUTPUT0", true), wantBinary(r, "OUTPUT1", false), r.expect(true, out0, out1))
		}
		grade(on("OIP-EXT-BIN-008", e, err))
	})

	It("frames a binary response with Inference-Header-Content-Length and Content-Length", Req("OIP-EXT-BIN-009"), func(ctx SpecContext) {
		needFixture("add_sub")
		in0, in1 := addSubInputs(1)
		b := binaryRequest(in0, in1)
		binaryOutputs(b, "OUTPUT0", "OUTPUT1")
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = binaryFraming(r)
		}
		grade(on("OIP-EXT-BIN-009", e, err))
	})

	It("omits data and sends binary_data_size on binary outputs", Req("OIP-EXT-BIN-012"), func(ctx SpecContext) {
		needFixture("add_sub")
		b, _, _ := addSubRequest()
		binaryOutputs(b, "OUTPUT0")
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = wantBinary(r, "OUTPUT0", true)
		}
		grade(on("OIP-EXT-BIN-012", e, err))
	})

	It("records the Content-Type of binary responses", Req("OIP-EXT-BIN-013"), func(ctx SpecContext) {
		needFixture("add_sub")
		b, _, _ := addSubRequest()
		binaryOutputs(b, "OUTPUT0")
		e := tgt.post(ctx, "add_sub", "", b)
		err := e.wantStatus(http.StatusOK)
		if err == nil {
			note("OIP-EXT-BIN-013", "binary response Content-Type %q", e.header.Get("Content-Type"))
		}
		grade(on("OIP-EXT-BIN-013", e, err))
	})

	It("accepts JSON and binary inputs in one request", Req("OIP-EXT-BIN-015"), func(ctx SpecContext) {
		needFixture("add_sub")
		in0, in1 := addSubInputs(1)
		out0, out1 := addSubOutputs(in0, in1)
		b := request(jsonInput(in0))
		addBinary(&b, in1)
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = r.expect(true, out0, out1)
		}
		grade(on("OIP-EXT-BIN-015", e, err))
	})
})

var _ = Describe("REST binary tensor data errors", Over(TransportREST), Needs(FeatureBinaryTensorData), func() {
	BeforeEach(func() { needFixture("add_sub") })

	// body returns add_sub with both inputs binary, its JSON length and tail.
	body := func() ([]byte, int) {
		in0, in1 := addSubInputs(1)
		return binaryRequest(in0, in1).encode()
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
			rb.json["inputs"].([]any)[0].(obj)["data"] = jsonValues(in0)
			b, hl := rb.encode()
			return octet(strconv.Itoa(hl)), b
		}},
	}
	for _, c := range cases {
		It("rejects "+c.text, Req(c.req, "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			afterNegative()
			h, b := c.build()
			e := tgt.postRaw(ctx, "add_sub", h, b)
			grade(rejection(e, c.req, "OIP-REST-ERR-001", "", false)...)
		})
	}
})

func binSizeOf(o *wireOutput) any {
	if o == nil {
		return "(output missing)"
	}
	if o.binSize < 0 {
		return "(absent)"
	}
	return o.binSize
}

// wantBinary checks whether output name came back as binary data (no data,
// binary_data_size) or as JSON data.
func wantBinary(r *inferResult, name string, binary bool) error {
	o := r.output(name)
	if o == nil {
		return fmt.Errorf("output %q is missing (outputs: %v)", name, r.names())
	}
	_, hasData := o.fields["data"]
	switch {
	case binary && hasData:
		return fmt.Errorf("output %q was asked for as binary but carries \"data\"", name)
	case binary && o.binSize < 0:
		return fmt.Errorf("output %q was asked for as binary but has no parameters.binary_data_size", name)
	case !binary && o.binSize >= 0:
		return fmt.Errorf("output %q was asked for as JSON but came back as binary data", name)
	case !binary && !hasData:
		return fmt.Errorf("output %q was asked for as JSON but has no \"data\"", name)
	}
	return nil
}
