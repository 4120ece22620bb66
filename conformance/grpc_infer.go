package conformance

import (
	"encoding/binary"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// addSubPB is the canonical add_sub gRPC request and its expected outputs.
func addSubPB(raw bool) (*pb.ModelInferRequest, tensor.Tensor, tensor.Tensor) {
	in0, in1 := addSubInputs(1)
	out0, out1 := addSubOutputs(in0, in1)
	return pbRequest("add_sub", raw, in0, in1), out0, out1
}

var _ = Describe("gRPC inference", Over(TransportGRPC), func() {
	BeforeEach(func() { needFixture("add_sub") })

	It("answers a valid add_sub ModelInfer with OK and the sums and differences", Req("OIP-GRPC-INFER-001"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, out0, out1)
		}
		grade(on("OIP-GRPC-INFER-001", c, err))
	})

	for _, tc := range []struct{ what, id string }{
		{"a plain id", "abc"},
		{"a UTF-8 id", "é-✓"},
		{"a 1 KiB id", strings.Repeat("0123456789abcdef", 64)},
	} {
		It("returns "+tc.what+" in the response", Req("OIP-GRPC-INFER-003"), func(ctx SpecContext) {
			req, _, _ := addSubPB(false)
			req.Id = tc.id
			resp, c := tgt.infer(ctx, req)
			err := c.wantOK()
			if err == nil && resp.GetId() != tc.id {
				err = fmt.Errorf("id is %q, want %q", clip(resp.GetId(), 80), clip(tc.id, 80))
			}
			grade(on("OIP-GRPC-INFER-003", c, err))
		})
	}

	It("names the model that ran in model_name", Req("OIP-GRPC-INFER-004"), func(ctx SpecContext) {
		req, _, _ := addSubPB(false)
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil && resp.GetModelName() != "add_sub" {
			err = fmt.Errorf("model_name is %q, want \"add_sub\"", resp.GetModelName())
		}
		grade(on("OIP-GRPC-INFER-004", c, err))
	})

	It("returns every output when outputs is empty", Req("OIP-GRPC-INFER-005"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, out0, out1)
		}
		grade(on("OIP-GRPC-INFER-005", c, err))
	})

	It("returns exactly the requested output", Req("OIP-GRPC-INFER-006"), func(ctx SpecContext) {
		req, _, out1 := addSubPB(false)
		req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT1"}}
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		var extra error
		if err == nil {
			err = expectPB(resp, out1)
			if len(resp.GetOutputs()) != 1 {
				extra = fmt.Errorf("%d outputs returned, want only OUTPUT1", len(resp.GetOutputs()))
			}
		}
		grade(on("OIP-GRPC-INFER-006", c, err), softOn("OIP-GRPC-INFER-006", "A-19", c, extra))
	})

	It("carries output name, datatype, shape and data in contents or raw_output_contents", Req("OIP-GRPC-INFER-014"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil {
			for _, o := range resp.GetOutputs() {
				if o.GetName() == "" || o.GetDatatype() == "" {
					err = errs(err, fmt.Errorf("output %q has datatype %q; want both set", o.GetName(), o.GetDatatype()))
				}
				if o.GetContents() == nil && len(resp.GetRawOutputContents()) == 0 {
					err = errs(err, fmt.Errorf("output %q has neither contents nor raw_output_contents", o.GetName()))
				}
			}
			err = errs(err, expectPB(resp, out0, out1))
		}
		grade(on("OIP-GRPC-INFER-014", c, err))
	})

	It("uses the OIP field numbers and types, leaving no unknown fields", Req("OIP-GEN-007"), func(ctx SpecContext) {
		req, _, _ := addSubPB(false)
		req.Id = "gen-007"
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil {
			err = unknownFields(resp)
		}
		meta, mc := invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, tgt.grpc.Stub().ServerMetadata)
		merr := mc.wantOK()
		if merr == nil {
			merr = unknownFields(meta)
		}
		model, mmc, wire := modelMetadata(ctx, &pb.ModelMetadataRequest{Name: "add_sub"})
		mmerr := mmc.wantOK()
		if mmerr == nil {
			mmerr = errs(wire, unknownFields(model))
		}
		grade(on("OIP-GEN-007", c, err), on("OIP-GEN-007", mc, merr), on("OIP-GEN-007", mmc, mmerr))
	})

	It("runs a batch of three rows", Req("OIP-GRPC-INFER-001"), func(ctx SpecContext) {
		in0, in1 := addSubInputs(3)
		out0, out1 := addSubOutputs(in0, in1)
		resp, c := tgt.infer(ctx, pbRequest("add_sub", false, in0, in1))
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, out0, out1)
		}
		grade(on("OIP-GRPC-INFER-001", c, err))
	})

	It("accepts bool, int64 and string parameters", Req("OIP-GRPC-PARAM-001"), func(ctx SpecContext) {
		req, _, _ := addSubPB(false)
		req.Parameters = map[string]*pb.InferParameter{
			"oipkit_b": {ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}},
			"oipkit_i": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 1}},
			"oipkit_s": {ParameterChoice: &pb.InferParameter_StringParam{StringParam: "x"}},
		}
		_, c := tgt.infer(ctx, req)
		err := c.wantOK()
		// refusing unknown parameters is a warning, whatever the
		// code; a crash (INTERNAL, UNKNOWN) or no answer is not a refusal.
		if err != nil && grpcNoAnswer(c.err) == nil && !clientSide(c.err) && c.code() != codes.Internal && c.code() != codes.Unknown {
			grade(softOn("OIP-GRPC-PARAM-001", "A-16", c, fmt.Errorf("unknown parameters were rejected: %v", err)))
			return
		}
		grade(on("OIP-GRPC-PARAM-001", c, err))
	})

	It("accepts empty parameter maps at every level", Req("OIP-GRPC-PARAM-002"), func(ctx SpecContext) {
		req, out0, _ := addSubPB(false)
		req.Parameters = map[string]*pb.InferParameter{}
		for _, in := range req.Inputs {
			in.Parameters = map[string]*pb.InferParameter{}
		}
		req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0", Parameters: map[string]*pb.InferParameter{}}}
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, out0)
		}
		grade(on("OIP-GRPC-PARAM-002", c, err))
	})
})

var _ = Describe("gRPC versioned inference", Over(TransportGRPC), func() {
	BeforeEach(func() { needFixture("versioned") })

	It("runs the version named in model_version and reports it", Req("OIP-GRPC-INFER-002", "OIP-GRPC-INFER-004"), func(ctx SpecContext) {
		needVersions()
		var fs []finding
		for _, v := range []int32{1, 2} {
			req := pbRequest("versioned", false, int32s("INPUT0", []int64{1}, 10))
			req.ModelVersion = fmt.Sprint(v)
			resp, c := tgt.infer(ctx, req)
			err := c.wantOK()
			var verErr error
			if err == nil {
				err = expectPB(resp, int32s("OUTPUT0", []int64{1}, 10+v))
				if got := resp.GetModelVersion(); got != "" && got != req.ModelVersion {
					verErr = fmt.Errorf("model_version is %q, want %q", got, req.ModelVersion)
				}
			}
			fs = append(fs, on("OIP-GRPC-INFER-002", c, err), on("OIP-GRPC-INFER-004", c, verErr))
		}
		grade(fs...)
	})

	It("runs a version of its choice when model_version is empty", Req("OIP-GRPC-INFER-002"), func(ctx SpecContext) {
		resp, c := tgt.infer(ctx, pbRequest("versioned", false, int32s("INPUT0", []int64{1}, 10)))
		err := c.wantOK()
		if err != nil && grpcNoAnswer(c.err) == nil && !clientSide(c.err) {
			// The version policy is the server's, and REST lets it "return
			// an error" (OIP-REST-INFER-003, A-08): a refusal is recorded,
			// not graded.
			note("OIP-GRPC-INFER-002", "empty model_version answered %s", c.code())
			return
		}
		if err == nil {
			t, terr := pbOutput(resp, "OUTPUT0")
			if err = terr; err == nil {
				v, _ := t.Data.([]int32)
				if len(v) != 1 || (v[0] != 11 && v[0] != 12) {
					err = fmt.Errorf("OUTPUT0 is %v, want [11] (version 1) or [12] (version 2)", t.Data)
				} else {
					note("OIP-GRPC-INFER-002", "empty model_version ran version %d", v[0]-10)
				}
			}
		}
		grade(on("OIP-GRPC-INFER-002", c, err))
	})
})

// typedReq maps a datatype to the requirement for its typed contents field.
var _ = Describe("gRPC tensor contents", Over(TransportGRPC), func() {
	for _, d := range tensor.Datatypes {
		if d == tensor.FP16 || d == tensor.BF16 {
			It(fmt.Sprintf("round-trips %s through identity as raw contents, bit for bit", d), Req("OIP-GRPC-INFER-011"), func(ctx SpecContext) {
				needFixture(identityFixture(d))
				in := sample("INPUT0", d)
				resp, c := tgt.infer(ctx, pbRequest(identityFixture(d), true, in))
				err := c.wantOK()
				if err == nil {
					err = expectPB(resp, renamed(in, "OUTPUT0"))
				}
				grade(on("OIP-GRPC-INFER-011", c, err))
			})
			continue
		}
		It(fmt.Sprintf("round-trips %s through identity in its typed contents field", d), Req("OIP-GRPC-INFER-009"), func(ctx SpecContext) {
			needFixture(identityFixture(d))
			in := sample("INPUT0", d)
			resp, c := tgt.infer(ctx, pbRequest(identityFixture(d), false, in))
			err := c.wantOK()
			if err == nil {
				err = expectPB(resp, renamed(in, "OUTPUT0"))
			}
			grade(on("OIP-GRPC-INFER-009", c, err))
		})
		It(fmt.Sprintf("round-trips %s through identity as raw contents", d), Req("OIP-GRPC-RAW-001", "OIP-GRPC-RAW-005"), func(ctx SpecContext) {
			needFixture(identityFixture(d))
			in := sample("INPUT0", d)
			resp, c := tgt.infer(ctx, pbRequest(identityFixture(d), true, in))
			err := c.wantOK()
			if err == nil {
				err = expectPB(resp, renamed(in, "OUTPUT0"))
			}
			grade(on("OIP-GRPC-RAW-001", c, err), on("OIP-GRPC-RAW-005", c, err))
		})
	}

	It("keeps row-major order in typed contents", Req("OIP-GRPC-INFER-010"), func(ctx SpecContext) {
		needFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		resp, c := tgt.infer(ctx, pbRequest("identity_int32", false, in))
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, renamed(in, "OUTPUT0"))
		}
		grade(on("OIP-GRPC-INFER-010", c, err))
	})

	It("keeps row-major order in raw contents", Req("OIP-GRPC-RAW-004"), func(ctx SpecContext) {
		needFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		resp, c := tgt.infer(ctx, pbRequest("identity_int32", true, in))
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, renamed(in, "OUTPUT0"))
		}
		grade(on("OIP-GRPC-RAW-004", c, err))
	})

	It("reads raw contents as little-endian", Req("OIP-GRPC-RAW-005"), func(ctx SpecContext) {
		needFixture("identity_int32")
		raw := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 1), 256)
		req := &pb.ModelInferRequest{ModelName: "identity_int32",
			Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 2}}},
			RawInputContents: [][]byte{raw}}
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, int32s("OUTPUT0", []int64{1, 2}, 1, 256))
		}
		grade(on("OIP-GRPC-RAW-005", c, err))
	})

	It("reads raw BYTES elements with a 4-byte little-endian length", Req("OIP-GRPC-RAW-006"), func(ctx SpecContext) {
		needFixture("identity_bytes")
		req := &pb.ModelInferRequest{ModelName: "identity_bytes",
			Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "BYTES", Shape: []int64{1, 2}}},
			RawInputContents: [][]byte{{1, 0, 0, 0, 'a', 3, 0, 0, 0, 'b', 'c', 'd'}}}
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.Bytes, Shape: []int64{1, 2}, Data: [][]byte{[]byte("a"), []byte("bcd")}})
		}
		grade(on("OIP-GRPC-RAW-006", c, err))
	})

	It("pairs raw input buffers with inputs by position", Req("OIP-GRPC-RAW-001"), func(ctx SpecContext) {
		needFixture("add_sub")
		in0, in1 := addSubInputs(1)
		req := pbRequest("add_sub", true, in0, in1)
		// Swap the buffers but not the inputs: INPUT0 now holds in1's data.
		req.RawInputContents[0], req.RawInputContents[1] = req.RawInputContents[1], req.RawInputContents[0]
		out0, out1 := addSubOutputs(renamed(in1, "INPUT0"), renamed(in0, "INPUT1"))
		resp, c := tgt.infer(ctx, req)
		err := c.wantOK()
		if err == nil {
			err = expectPB(resp, out0, out1)
		}
		grade(on("OIP-GRPC-RAW-001", c, err))
	})

	It("uses raw_output_contents, if at all, with one entry per output and no contents", Req("OIP-GRPC-RAW-007"), func(ctx SpecContext) {
		needFixture("add_sub")
		var fs []finding
		for _, raw := range []bool{false, true} {
			req, _, _ := addSubPB(raw)
			resp, c := tgt.infer(ctx, req)
			err := c.wantOK()
			if err == nil {
				err = rawFormErr(resp)
			}
			fs = append(fs, on("OIP-GRPC-RAW-007", c, err))
		}
		grade(fs...)
	})

	It("records how INT8 values outside the type's range are handled", Req("OIP-GRPC-INFER-012"), func(ctx SpecContext) {
		needFixture("identity_int8")
		req := &pb.ModelInferRequest{ModelName: "identity_int8",
			Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT8", Shape: []int64{1, 1},
				Contents: &pb.InferTensorContents{IntContents: []int32{300}}}}}
		resp, c := tgt.infer(ctx, req)
		if c.err == nil {
			note("OIP-GRPC-INFER-012", "INT8 300 was accepted: %s", clip(protoText(resp), 200))
		} else {
			note("OIP-GRPC-INFER-012", "INT8 300 was rejected with %s", c.code())
		}
		grade(on("", c, grpcNoAnswer(c.err)))
	})
})
