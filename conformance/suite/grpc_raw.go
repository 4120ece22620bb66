package suite

import (
	"encoding/binary"
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-GRPC-RAW: raw_input_contents and raw_output_contents.

var _ = Describe("gRPC tensor contents", Over(TransportGRPC), func() {
	for _, d := range tensor.Datatypes {
		if d == tensor.FP16 || d == tensor.BF16 {
			continue // raw is their only form: OIP-GRPC-INFER-011 (grpc_infer.go)
		}
		It(fmt.Sprintf("round-trips %s through identity as raw contents", d), Req("OIP-GRPC-RAW-001", "OIP-GRPC-RAW-005"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := sample("INPUT0", d)
			_, c := Infer(ctx, PBRequest(identityFixture(d), true, in))
			VerifyReq("OIP-GRPC-RAW-001", c).To(HaveOutputs(identityOutput(in)))
			VerifyReq("OIP-GRPC-RAW-005", c).To(HaveOutputs(identityOutput(in)))
		})
	}

	for _, d := range tensor.Datatypes {
		if d == tensor.FP16 || d == tensor.BF16 {
			continue // OIP-GRPC-INFER-011 (grpc_infer.go)
		}
		reqs := []string{"OIP-GRPC-RAW-001", "OIP-GRPC-RAW-005"}
		if d == tensor.Bytes {
			reqs = append(reqs, "OIP-GRPC-RAW-006")
		}
		It(fmt.Sprintf("round-trips a %d-element %s tensor of edge values through identity as raw contents, bit for bit", hardRows*hardCols, d), Req(reqs...), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := hardTensor("INPUT0", d, formBits)
			_, c := Infer(ctx, PBRequest(identityFixture(d), true, in))
			for _, req := range reqs {
				VerifyReq(req, c).To(HaveOutputs(identityOutput(in)))
			}
		})
	}

	for _, d := range []tensor.Datatype{tensor.FP32, tensor.Bytes} {
		It(fmt.Sprintf("answers raw %s tensors with a 0 dimension as empty tensors, or refuses them", d), Req("OIP-GRPC-RAW-001", "OIP-GRPC-INFER-005", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			AfterNegative()
			for _, shape := range [][]int64{{1, 0}, {0, 3}} {
				in := emptyTensor("INPUT0", d, shape)
				_, c := Infer(ctx, PBRequest(identityFixture(d), true, in))
				emptyCall(c, identityOutput(in), "OIP-GRPC-RAW-001", "OIP-GRPC-INFER-005")
			}
		})
	}

	It("keeps row-major order in raw contents", Req("OIP-GRPC-RAW-004"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		_, c := Infer(ctx, PBRequest("identity_int32", true, in))
		Verify(c).To(HaveOutputs(identityOutput(in)))
	})

	It("reads raw contents as little-endian", Req("OIP-GRPC-RAW-005"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		raw := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 1), 256)
		req := &pb.ModelInferRequest{Id: RequestID, ModelName: "identity_int32",
			Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 2}}},
			RawInputContents: [][]byte{raw}}
		_, c := Infer(ctx, req)
		Verify(c).To(HaveOutputs(identityOutput(int32s("INPUT0", []int64{1, 2}, 1, 256))))
	})

	It("reads raw BYTES elements with a 4-byte little-endian length", Req("OIP-GRPC-RAW-006"), func(ctx SpecContext) {
		NeedFixture("identity_bytes")
		req := &pb.ModelInferRequest{Id: RequestID, ModelName: "identity_bytes",
			Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "BYTES", Shape: []int64{1, 2}}},
			RawInputContents: [][]byte{{1, 0, 0, 0, 'a', 3, 0, 0, 0, 'b', 'c', 'd'}}}
		_, c := Infer(ctx, req)
		Verify(c).To(HaveOutputs(identityOutput(tensor.Tensor{Name: "INPUT0", Datatype: tensor.Bytes, Shape: []int64{1, 2}, Data: [][]byte{[]byte("a"), []byte("bcd")}})))
	})

	It("pairs raw input buffers with inputs by position", Req("OIP-GRPC-RAW-001"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		in0, in1 := addSubInputs(1)
		req := PBRequest("add_sub", true, in0, in1)
		// Swap the buffers but not the inputs: INPUT0 now holds in1's data.
		req.RawInputContents[0], req.RawInputContents[1] = req.RawInputContents[1], req.RawInputContents[0]
		out0, out1 := addSubOutputs(renamed(in1, "INPUT0"), renamed(in0, "INPUT1"))
		_, c := Infer(ctx, req)
		Verify(c).To(HaveOutputs(out0, out1))
	})

	It("uses raw_output_contents, if at all, with one entry per output and no contents", Req("OIP-GRPC-RAW-007"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		for _, raw := range []bool{false, true} {
			req, _, _ := addSubPB(raw)
			_, c := Infer(ctx, req)
			Verify(c).To(HaveRawOutputForm())
		}
	})
})

var _ = Describe("gRPC inference errors", Over(TransportGRPC), func() {
	grpcRejectSpecs(
		grpcCase{text: "raw and typed contents mixed", req: "OIP-GRPC-RAW-002", codes: invalid,
			build: addSubPBWith(true, func(r *pb.ModelInferRequest) {
				// INPUT1 moves from raw to int_contents; INPUT0 stays raw.
				in1 := r.RawInputContents[1]
				r.RawInputContents = r.RawInputContents[:1]
				v := make([]int32, len(in1)/4)
				for i := range v {
					v[i] = int32(binary.LittleEndian.Uint32(in1[4*i:]))
				}
				r.Inputs[1].Contents = &pb.InferTensorContents{IntContents: v}
			})},
		grpcCase{text: "a 60-byte raw buffer for a [1,16] INT32 input", req: "OIP-GRPC-RAW-003", codes: invalid,
			build: addSubPBWith(true, func(r *pb.ModelInferRequest) { r.RawInputContents[0] = r.RawInputContents[0][:60] })},
		grpcCase{text: "a 68-byte raw buffer for a [1,16] INT32 input", req: "OIP-GRPC-RAW-003", codes: invalid,
			build: addSubPBWith(true, func(r *pb.ModelInferRequest) { r.RawInputContents[0] = append(r.RawInputContents[0], 0, 0, 0, 0) })},
		grpcCase{text: "a raw BYTES element whose length runs past the buffer", req: "OIP-GRPC-RAW-003", codes: invalid, fixture: "identity_bytes",
			build: func() *pb.ModelInferRequest {
				return &pb.ModelInferRequest{Id: RequestID, ModelName: "identity_bytes",
					Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "BYTES", Shape: []int64{1, 1}}},
					RawInputContents: [][]byte{{9, 0, 0, 0, 'a', 'b'}}}
			}},
		grpcCase{text: "three raw buffers for two inputs", req: "OIP-GRPC-RAW-008", codes: invalid,
			build: addSubPBWith(true, func(r *pb.ModelInferRequest) { r.RawInputContents = append(r.RawInputContents, r.RawInputContents[0]) })},
		grpcCase{text: "one raw buffer for two inputs", req: "OIP-GRPC-RAW-008", codes: invalid,
			build: addSubPBWith(true, func(r *pb.ModelInferRequest) { r.RawInputContents = r.RawInputContents[:1] })},
	)
})
