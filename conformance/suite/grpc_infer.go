package suite

import (
	"cmp"
	"fmt"
	"math/big"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	. "github.com/oipkit/oipkit/conformance/engine"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-GRPC-INFER: ModelInfer.

var _ = Describe("gRPC inference", Over(TransportGRPC), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	It("answers a valid add_sub ModelInfer with OK and the sums and differences", Req("OIP-GRPC-INFER-001"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		_, c := Infer(ctx, req)
		Verify(c).To(HaveOutputs(out0, out1))
	})

	for _, tc := range []struct{ what, id string }{
		{"a plain id", "abc"},
		{"a UTF-8 id", "é-✓"},
		{"a 1 KiB id", strings.Repeat("0123456789abcdef", 64)},
		{"an id with quotes, backslashes, control characters, NUL and astral characters", oddID},
	} {
		It("returns "+tc.what+" in the response", Req("OIP-GRPC-INFER-003"), func(ctx SpecContext) {
			req, _, _ := addSubPB(false)
			req.Id = tc.id
			_, c := Infer(ctx, req)
			Verify(c).To(HaveResponseID(tc.id))
		})
	}

	// The one gRPC spec whose subject is a request without an id: every
	// other request carries one (RequestID).
	It("answers a request without an id, and records the id it returns", Req("OIP-GRPC-INFER-003", "OIP-GRPC-INFER-001"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		req.Id = ""
		resp, c := Infer(ctx, req)
		VerifyReq("OIP-GRPC-INFER-001", c).To(HaveOutputs(out0, out1))
		// nothing is asked of the id when the request had none.
		if c.Err == nil && resp.GetId() != "" {
			Note("OIP-GRPC-INFER-003", "a request without an id was answered with id %q", clipped(resp.GetId(), 80))
		}
	})

	It("names the model that ran in model_name", Req("OIP-GRPC-INFER-004"), func(ctx SpecContext) {
		req, _, _ := addSubPB(false)
		_, c := Infer(ctx, req)
		Verify(c).To(HaveModelName("add_sub"))
	})

	It("returns every output when outputs is empty", Req("OIP-GRPC-INFER-005"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		_, c := Infer(ctx, req)
		Verify(c).To(HaveOutputs(out0, out1))
	})

	It("returns exactly the requested output", Req("OIP-GRPC-INFER-006"), func(ctx SpecContext) {
		req, _, out1 := addSubPB(false)
		req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT1"}}
		_, c := Infer(ctx, req)
		if Verify(c).To(HaveOutputs(out1)) {
			Verify(c).Soft("A-19").To(HaveOnlyOutputs("OUTPUT1"))
		}
	})

	It("carries output name, datatype, shape and data in contents or raw_output_contents", Req("OIP-GRPC-INFER-014"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		_, c := Infer(ctx, req)
		Verify(c).To(All(HaveOutputTensorFields(), HaveOutputs(out0, out1)))
	})

	It("runs a batch of three rows", Req("OIP-GRPC-INFER-001"), func(ctx SpecContext) {
		in0, in1 := addSubInputs(3)
		out0, out1 := addSubOutputs(in0, in1)
		_, c := Infer(ctx, PBRequest("add_sub", false, in0, in1))
		Verify(c).To(HaveOutputs(out0, out1))
	})
})

var _ = Describe("gRPC versioned inference", Over(TransportGRPC), func() {
	BeforeEach(func() { NeedFixture("versioned") })

	It("runs the version named in model_version and reports it", Req("OIP-GRPC-INFER-002", "OIP-GRPC-INFER-004"), func(ctx SpecContext) {
		NeedVersions()
		for _, v := range []int32{1, 2} {
			in := int32s("INPUT0", []int64{1}, 10)
			req := PBRequest("versioned", false, in)
			req.ModelVersion = fmt.Sprint(v)
			_, c := Infer(ctx, req)
			VerifyReq("OIP-GRPC-INFER-002", c).To(HaveOutputs(versionedOutput(v, in)))
			if c.Err == nil {
				VerifyReq("OIP-GRPC-INFER-004", c).To(PassCheck(func(r *pb.ModelInferResponse) error {
					if got := r.GetModelVersion(); got != "" && got != req.ModelVersion {
						return fmt.Errorf("model_version is %q, want %q", got, req.ModelVersion)
					}
					return nil
				}))
			}
		}
	})

	It("runs a version of its choice when model_version is empty", Req("OIP-GRPC-INFER-002"), func(ctx SpecContext) {
		in := int32s("INPUT0", []int64{1}, 10)
		_, c := Infer(ctx, PBRequest("versioned", false, in))
		if !Answered(c) {
			return
		}
		if c.Err != nil && !ClientSide(c.Err) {
			// The version policy is the server's, and REST lets it "return
			// an error" (OIP-REST-INFER-003, A-08): a refusal is recorded,
			// not graded.
			Note("OIP-GRPC-INFER-002", "empty model_version answered %s", c.Code())
			return
		}
		Verify(c).To(PassCheck(func(r *pb.ModelInferResponse) error {
			t, err := PBOutput(r, "OUTPUT0")
			if err != nil {
				return err
			}
			v, err := versionThatRan(in, t)
			if err == nil {
				Note("OIP-GRPC-INFER-002", "empty model_version ran version %d", v)
			}
			return err
		}))
	})
})

var _ = Describe("gRPC tensor contents", Over(TransportGRPC), func() {
	for _, d := range tensor.Datatypes {
		if d == tensor.FP16 || d == tensor.BF16 {
			It(fmt.Sprintf("round-trips %s through identity as raw contents, bit for bit", d), Req("OIP-GRPC-INFER-011"), func(ctx SpecContext) {
				NeedFixture(identityFixture(d))
				in := sample("INPUT0", d)
				_, c := Infer(ctx, PBRequest(identityFixture(d), true, in))
				Verify(c).To(HaveOutputs(identityOutput(in)))
			})
			continue
		}
		It(fmt.Sprintf("round-trips %s through identity in its typed contents field", d), Req("OIP-GRPC-INFER-009"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := sample("INPUT0", d)
			_, c := Infer(ctx, PBRequest(identityFixture(d), false, in))
			Verify(c).To(HaveOutputs(identityOutput(in)))
		})
	}

	for _, d := range tensor.Datatypes {
		if d == tensor.FP16 || d == tensor.BF16 {
			It(fmt.Sprintf("round-trips a %d-element %s tensor of edge values through identity as raw contents, bit for bit", hardRows*hardCols, d), Req("OIP-GRPC-INFER-011"), func(ctx SpecContext) {
				NeedFixture(identityFixture(d))
				in := hardTensor("INPUT0", d, formBits)
				_, c := Infer(ctx, PBRequest(identityFixture(d), true, in))
				Verify(c).To(HaveOutputs(identityOutput(in)))
			})
			continue
		}
		It(fmt.Sprintf("round-trips a %d-element %s tensor of edge values through identity in its typed contents field, bit for bit", hardRows*hardCols, d), Req("OIP-GRPC-INFER-009", "OIP-GRPC-INFER-003"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := hardTensor("INPUT0", d, formBits)
			req := PBRequest(identityFixture(d), false, in)
			req.Id = "hard-" + d.Lower()
			_, c := Infer(ctx, req)
			VerifyReq("OIP-GRPC-INFER-009", c).To(HaveOutputs(identityOutput(in)))
			VerifyReq("OIP-GRPC-INFER-003", c).To(HaveResponseID(req.Id))
		})
	}

	for _, d := range []tensor.Datatype{tensor.FP32, tensor.Bytes} {
		It(fmt.Sprintf("answers typed %s tensors with a 0 dimension as empty tensors, or refuses them", d), Req("OIP-GRPC-INFER-005", "OIP-GRPC-INFER-009", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			AfterNegative()
			for _, shape := range [][]int64{{1, 0}, {0, 3}} {
				in := emptyTensor("INPUT0", d, shape)
				_, c := Infer(ctx, PBRequest(identityFixture(d), false, in))
				emptyCall(c, identityOutput(in), "OIP-GRPC-INFER-009", "OIP-GRPC-INFER-005")
			}
		})
	}

	It("keeps row-major order in typed contents", Req("OIP-GRPC-INFER-010"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		_, c := Infer(ctx, PBRequest("identity_int32", false, in))
		Verify(c).To(HaveOutputs(identityOutput(in)))
	})

	It("refuses INT8/INT16/UINT8/UINT16 contents one step beyond the type's range, never answering another value", Req("OIP-GRPC-INFER-012", "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		AfterNegative()
		// The types whose contents field is wider than the type; one call
		// per value, one finding for every type a success changed.
		var changed, faults, refused []string
		var changedAt, faultAt *Call
		tried := 0
		for _, d := range []tensor.Datatype{tensor.Int8, tensor.Int16, tensor.Uint8, tensor.Uint16} {
			if !Current().Deployed(identityFixture(d)) {
				Note("OIP-GRPC-INFER-012", "%s not tried: fixture %s is not deployed", d, identityFixture(d))
				continue
			}
			below, above := beyondRange(d)
			for _, v := range []*big.Int{below, above} {
				c := &pb.InferTensorContents{}
				switch {
				case d == tensor.Int8 || d == tensor.Int16:
					c.IntContents = []int32{int32(v.Int64())}
				case v.Sign() < 0:
					continue // uint_contents cannot carry it
				default:
					c.UintContents = []uint32{uint32(v.Uint64())}
				}
				tried++
				req := &pb.ModelInferRequest{Id: RequestID, ModelName: identityFixture(d),
					Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: string(d), Shape: []int64{1, 1}, Contents: c}}}
				resp, call := Infer(ctx, req)
				if !Answered(call) {
					continue
				}
				sent := fmt.Sprintf("%s %s", d, v)
				switch {
				case call.Err == nil && !VerifyReq("OIP-GRPC-SVC-002", call).To(CarryResult()):
					// A failure reported in-band: that defect, not this one.
				case call.Err == nil:
					if got := outOfRangeCall(resp, v); got != "" {
						changed = append(changed, sent+" → "+got)
						changedAt = cmp.Or(changedAt, call)
					} else {
						Note("OIP-GRPC-INFER-012", "%s was answered unchanged", sent)
					}
				case ClientSide(call.Err):
					VerifyReq("OIP-GRPC-INFER-012", call).To(BeRejected())
				case call.Code() == codes.Internal || call.Code() == codes.Unknown:
					faults = append(faults, fmt.Sprintf("%s (%s)", sent, call.Code()))
					faultAt = cmp.Or(faultAt, call)
				default:
					refused = append(refused, fmt.Sprintf("%s (%s)", sent, call.Code()))
				}
			}
		}
		if tried == 0 {
			NeedFixture(identityFixture(tensor.Int8))
		}
		if len(refused) > 0 {
			Note("OIP-GRPC-INFER-012", "refused: %s", strings.Join(refused, ", "))
		}
		if faultAt != nil {
			// A refusal all the same, so the rule itself holds; its code is
			// judged as the core judges every refused request's, once, under
			// OIP-GRPC-ERR-002 (INVALID_ARGUMENT expected for bad input).
			VerifyReq("OIP-GRPC-ERR-002", faultAt).To(HaveCode(codes.InvalidArgument, codes.OutOfRange), "out-of-range contents refused with "+strings.Join(faults, ", "))
		}
		if changedAt != nil {
			VerifyReq("OIP-GRPC-INFER-012", changedAt).To(PassCheck(func(*Call) error {
				return fmt.Errorf("contents outside their datatype's range were answered OK with another value (neither coerced, which a value the type cannot hold cannot be, nor refused): %s", strings.Join(changed, "; "))
			}))
		}
	})
})

var _ = Describe("gRPC inference errors", Over(TransportGRPC), func() {
	// On add_sub, not the versioned fixture (versions.go).
	It("answers ModelInfer on versions add_sub does not have with a non-OK status", Req("OIP-GRPC-INFER-002", "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		AfterNegative()
		askVersionsGRPC(ctx, "OIP-GRPC-INFER-002", func(v string) *Call {
			req, _, _ := addSubPB(false)
			req.ModelVersion = v
			_, c := Infer(ctx, req)
			return c
		}, nil)
	})

	neverReadyGRPCInferSpec() // a model that never becomes ready (notready.go)

	grpcRejectSpecs(
		grpcCase{text: "an unknown model", req: "OIP-GRPC-INFER-013", codes: []codes.Code{codes.NotFound, codes.InvalidArgument},
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.ModelName = "does_not_exist" })},
		grpcCase{text: "a missing input", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs = r.Inputs[:1] })},
		grpcCase{text: "an unknown input name", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs[0].Name = "NOPE" })},
		grpcCase{text: "15 typed elements for shape [1,16]", req: "OIP-GRPC-INFER-008", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				c := r.Inputs[0].Contents
				c.IntContents = c.IntContents[:15]
			})},
		grpcCase{text: "17 typed elements for shape [1,16]", req: "OIP-GRPC-INFER-008", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				c := r.Inputs[0].Contents
				c.IntContents = append(c.IntContents, 16)
			})},
		// The REST rules on inputs (OIP-REST-INFER-012, -020, -021) hold
		// for gRPC too, which "closely follows the concepts defined in the
		// HTTP/REST API": graded under OIP-GRPC-INFER-013 (see its test).
		grpcCase{text: "a duplicated input", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				r.Inputs = append(r.Inputs, proto.Clone(r.Inputs[0]).(*pb.ModelInferRequest_InferInputTensor))
			})},
		grpcCase{text: "an extra input the model does not have", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				extra := proto.Clone(r.Inputs[0]).(*pb.ModelInferRequest_InferInputTensor)
				extra.Name = "INPUT2"
				r.Inputs = append(r.Inputs, extra)
			})},
		grpcCase{text: "a datatype other than the model's", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				in0, _ := addSubInputs(1)
				r.Inputs[0] = PBRequest("add_sub", false, asFloat32(in0)).Inputs[0]
			})},
		grpcCase{text: "a rank-1 shape [16] for a [-1,16] input", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs[0].Shape = []int64{16} })},
		grpcCase{text: "a rank-3 shape [1,1,16] for a [-1,16] input", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs[0].Shape = []int64{1, 1, 16} })},
		grpcCase{text: "shape [2,8] (16 elements) for a [-1,16] input", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs[0].Shape = []int64{2, 8} })},
		grpcCase{text: "shape [1,15] with 15 elements for a [-1,16] input", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				r.Inputs[0].Shape = []int64{1, 15}
				r.Inputs[0].Contents.IntContents = r.Inputs[0].Contents.IntContents[:15]
			})},
		grpcCase{text: "raw contents of another datatype than the model's", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(true, func(r *pb.ModelInferRequest) {
				in0, _ := addSubInputs(1)
				f := asFloat32(in0)
				raw := PBRequest("add_sub", true, f)
				r.Inputs[0], r.RawInputContents[0] = raw.Inputs[0], raw.RawInputContents[0]
			})},
		grpcCase{text: "raw contents with a rank-1 shape [16] for a [-1,16] input", req: "OIP-GRPC-INFER-013", codes: invalid,
			build: addSubPBWith(true, func(r *pb.ModelInferRequest) { r.Inputs[0].Shape = []int64{16} })},
		grpcCase{text: "a scalar (shape []) for a [-1,-1] input", req: "OIP-GRPC-INFER-013", codes: invalid, soft: "A-35", fixture: "identity_fp32",
			build: func() *pb.ModelInferRequest {
				return &pb.ModelInferRequest{Id: RequestID, ModelName: "identity_fp32", Inputs: []*pb.ModelInferRequest_InferInputTensor{{
					Name: "INPUT0", Datatype: "FP32", Shape: []int64{}, Contents: &pb.InferTensorContents{Fp32Contents: []float32{1.5}}}}}
			}},
		grpcCase{text: "a requested output the model does not have", req: "OIP-GRPC-INFER-006", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				r.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "NOPE"}}
			})},
		// The MUST of OIP-GRPC-INFER-009 binds the sender to the matching
		// field (it binds clients and servers alike), so a server that
		// accepts the mismatch is lenient.
		grpcCase{text: "INT32 data in fp32_contents", req: "OIP-GRPC-INFER-009", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				c := r.Inputs[0].Contents
				fp := make([]float32, len(c.IntContents))
				for i, v := range c.IntContents {
					fp[i] = float32(v)
				}
				r.Inputs[0].Contents = &pb.InferTensorContents{Fp32Contents: fp}
			})},
		grpcCase{text: "raw contents together with typed contents on every input", req: "OIP-GRPC-INFER-007", codes: invalid,
			build: func() *pb.ModelInferRequest {
				typed, _, _ := addSubPB(false)
				raw, _, _ := addSubPB(true)
				typed.RawInputContents = raw.RawInputContents
				return typed
			}},
		// The catalog grades FP16 in fp32_contents as soft.
		grpcCase{text: "FP16 data in fp32_contents", req: "OIP-GRPC-INFER-011", codes: invalid, soft: "A-06",
			build: func() *pb.ModelInferRequest {
				return &pb.ModelInferRequest{Id: RequestID, ModelName: "identity_fp16", Inputs: []*pb.ModelInferRequest_InferInputTensor{{
					Name: "INPUT0", Datatype: "FP16", Shape: []int64{1, 2},
					Contents: &pb.InferTensorContents{Fp32Contents: []float32{1, 2}}}}}
			}},
	)
})

// emptyCall grades the answer to a ModelInfer with a 0-dimension tensor
// informational): a refusal is noted, and a crash (INTERNAL,
// UNKNOWN) is graded by the codes OIP-GRPC-ERR-002 expects of a request a
// server does not take; an answer must carry the output (present) and it
// must be the empty tensor (equal).
func emptyCall(c *Call, want tensor.Tensor, equal, present string) {
	if !Answered(c) {
		return
	}
	if c.Err != nil {
		if ClientSide(c.Err) {
			VerifyReq(equal, c).To(BeOK())
			return
		}
		Note(equal, "a %s tensor of shape %v: refused with %s", want.Datatype, want.Shape, c.Code())
		if c.Code() == codes.Internal || c.Code() == codes.Unknown {
			VerifyReq("OIP-GRPC-ERR-002", c).To(HaveCode(codes.InvalidArgument, codes.Unimplemented))
		}
		return
	}
	VerifyReq(present, c).To(PassCheck(func(r *pb.ModelInferResponse) error {
		for _, o := range r.GetOutputs() {
			if o.GetName() == want.Name {
				return nil
			}
		}
		return fmt.Errorf("a %s tensor of shape %v was accepted but %s is missing", want.Datatype, want.Shape, want.Name)
	}))
	VerifyReq(equal, c).To(HaveOutputs(want))
}

// asFloat32 is an INT32 tensor's values as FP32.
func asFloat32(t tensor.Tensor) tensor.Tensor {
	v := t.Data.([]int32)
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return tensor.Tensor{Name: t.Name, Datatype: tensor.FP32, Shape: t.Shape, Data: f}
}

// outOfRangeCall says how an OK answer to a value sent outside its
// datatype's range differs from the value sent, or "" when OUTPUT0 holds it
// unchanged (identity's contract); a typed output is read as the wide field
// carries it, so that an unchanged 300 is not mistaken for a wrapped one.
func outOfRangeCall(resp *pb.ModelInferResponse, sent *big.Int) string {
	for _, o := range resp.GetOutputs() {
		if o.GetName() != "OUTPUT0" || o.GetContents() == nil {
			continue
		}
		var got []int64
		for _, v := range o.GetContents().GetIntContents() {
			got = append(got, int64(v))
		}
		for _, v := range o.GetContents().GetUintContents() {
			got = append(got, int64(v))
		}
		if len(got) == 1 && got[0] == sent.Int64() {
			return ""
		}
	}
	t, err := PBOutput(resp, "OUTPUT0")
	if err != nil {
		return err.Error()
	}
	if t.Len() != 1 {
		return fmt.Sprintf("OUTPUT0 of %d elements", t.Len())
	}
	return fmt.Sprint(Element(t, 0))
}
