package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/client"
	. "github.com/oipkit/oipkit/conformance/engine"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-EXT-SHM with hard data (issue 24): every datatype through a region
// both ways, the offsets and byte sizes of a tensor at the region's edges,
// and malformed gRPC register, status and unregister calls. Values read
// back from a region are compared bit for bit with the fixture oracle
// (BYTES as 4-byte little-endian length-prefixed elements, BOOL one byte).

// shmSlot is where a tensor lives: a registered region, an offset in it
// (0 sends no shared_memory_offset) and a byte size.
type shmSlot struct {
	region       string
	offset, size int
}

func (s *shmSlot) String() string {
	return fmt.Sprintf("region %s offset %d byte size %d", s.region, s.offset, s.size)
}

// shmNewRegion creates an object of objSize bytes and registers
// [regOffset, regOffset+regSize) of it over the running spec's transport;
// ok is false (recorded under the spec's requirement) when that fails.
func shmNewRegion(ctx context.Context, grpc bool, objSize, regOffset, regSize int) (m *client.SharedMemory, name string, ok bool) {
	m = shmObject(objSize)
	name = shmRegionName("data")
	if grpc {
		return m, name, Verify(grpcSHMRegister(ctx, name, m, uint64(regOffset), uint64(regSize))).To(BeOK(), "registering the region must succeed for the inference to be checked")
	}
	return m, name, Verify(shmRegister(ctx, name, m, regOffset, regSize)).To(HaveStatus(http.StatusOK), "registering the region must succeed for the inference to be checked")
}

// shmIdentity asks identity_<dtype> for in, the input read from inS (nil:
// sent inline) and OUTPUT0 written to outS (nil: returned inline). The
// result is the *Exchange or *Call.
func shmIdentity(ctx context.Context, grpc bool, in tensor.Tensor, inS, outS *shmSlot) any {
	model := identityFixture(in.Datatype)
	if grpc {
		req := PBRequest(model, true, in)
		if inS != nil {
			req = &pb.ModelInferRequest{Id: RequestID, ModelName: model, Inputs: []*pb.ModelInferRequest_InferInputTensor{{
				Name: in.Name, Datatype: string(in.Datatype), Shape: in.Shape, Parameters: shmParams(inS.region, int64(inS.offset), int64(inS.size)),
			}}}
		}
		if outS != nil {
			req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0", Parameters: shmParams(outS.region, int64(outS.offset), int64(outS.size))}}
		}
		_, c := Infer(ctx, req)
		return c
	}
	input := JSONInput
	if inS != nil {
		input = func(t tensor.Tensor) Obj { return shmInput(t, inS.region, inS.offset, inS.size) }
	}
	b := Request(input(in))
	if outS != nil {
		p := Obj{"shared_memory_region": outS.region, "shared_memory_byte_size": outS.size}
		if outS.offset != 0 {
			p["shared_memory_offset"] = outS.offset
		}
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": p}}
	}
	return Post(ctx, model, "", b)
}

// shmHolds checks the answer x to a request for OUTPUT0 in region m at
// offset off: the answer carries no data for OUTPUT0, and the region holds
// want's raw bytes exactly.
func shmHolds(x any, m *client.SharedMemory, off int, want tensor.Tensor, where *shmSlot) error {
	switch v := x.(type) {
	case *InferResponse:
		o := v.Output("OUTPUT0")
		if o == nil {
			return errors.New("the response has no OUTPUT0")
		}
		if _, has := o.Fields["data"]; has {
			return fmt.Errorf(`OUTPUT0 (%s) was requested in %s but the response carries its "data"`, want.Datatype, where)
		}
	case *pb.ModelInferResponse:
		found := false
		for i, o := range v.GetOutputs() {
			if o.GetName() != "OUTPUT0" {
				continue
			}
			found = true
			if contentsCount(o.GetContents()) > 0 || i < len(v.GetRawOutputContents()) && len(v.GetRawOutputContents()[i]) > 0 {
				return fmt.Errorf("OUTPUT0 (%s) was requested in %s but the response carries its contents", want.Datatype, where)
			}
		}
		if !found {
			return errors.New("the response has no OUTPUT0")
		}
	}
	raw, err := tensor.EncodeRaw(want)
	if err != nil {
		return fmt.Errorf("suite: encoding the expected OUTPUT0: %w", err)
	}
	if got := m.Bytes()[off : off+len(raw)]; !bytes.Equal(got, raw) {
		return fmt.Errorf("%s OUTPUT0 written to %s: the region holds % x, want % x (%v)", want.Datatype, where, clipBytes(got), clipBytes(raw), want.Data)
	}
	return nil
}

// shmWritten checks x (a 200 or OK answer) with shmHolds.
func shmWritten(x any, m *client.SharedMemory, off int, want tensor.Tensor, where *shmSlot) {
	if c, ok := x.(*Call); ok {
		if Verify(c).To(BeOK()) {
			Verify(c).To(PassCheck(func(r *pb.ModelInferResponse) error { return shmHolds(r, m, off, want, where) }))
		}
		return
	}
	e := x.(*Exchange)
	if Verify(e).To(HaveStatus(http.StatusOK)) {
		Verify(e).To(PassCheck(func(r *InferResponse) error { return shmHolds(r, m, off, want, where) }))
	}
}

// shmSample is the tensor a spec sends: sample, with INT64/UINT64 a JSON
// answer carries exactly over REST.
func shmSample(grpc bool, d tensor.Datatype) tensor.Tensor {
	if grpc {
		return sample("INPUT0", d)
	}
	return jsonSafeSample("INPUT0", d)
}

// noJSON: FP16 and BF16 have no JSON form: over REST they are sent
// through a region and come back as binary data.
func noJSON(grpc bool, d tensor.Datatype) bool {
	return !grpc && (d == tensor.FP16 || d == tensor.BF16)
}

// shmReadBack runs identity with the input from inS and checks OUTPUT0
// equals the oracle, returned inline (as binary data where JSON has no
// form for it).
func shmReadBack(ctx context.Context, grpc bool, in tensor.Tensor, inS *shmSlot) {
	want := identityOutput(in)
	if !inlineRight(ctx, grpc, in, "OIP-EXT-SHM-002") {
		return
	}
	if noJSON(grpc, in.Datatype) {
		// OUTPUT0 as binary data (its spec Needs binary_tensor_data):
		// read back from a region, an output defect would fail this
		// input's requirement too.
		b := Request(shmInput(in, inS.region, inS.offset, inS.size))
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": Obj{"binary_data": true}}}
		Verify(Post(ctx, identityFixture(in.Datatype), "", b)).To(HaveOutputs(want))
		return
	}
	x := shmIdentity(ctx, grpc, in, inS, nil)
	if e, ok := x.(*Exchange); ok {
		if Verify(e).To(HaveOutputsNear(want)) {
			noteInexact("OIP-EXT-SHM-002", e, want)
		}
		return
	}
	Verify(x).To(HaveOutputs(want))
}

// shmReadAt places in at inOff of a new region of regSize bytes (within an
// object at register offset regOff) and reads it back with shmReadBack.
func shmReadAt(ctx context.Context, grpc bool, in tensor.Tensor, regOff, regSize, inOff int) {
	raw, err := tensor.EncodeRaw(in)
	if err != nil {
		Fail("suite: " + err.Error())
	}
	m, r, ok := shmNewRegion(ctx, grpc, regOff+regSize, regOff, regSize)
	if !ok {
		return
	}
	copy(m.Bytes()[regOff+inOff:], raw)
	shmReadBack(ctx, grpc, in, &shmSlot{r, inOff, len(raw)})
}

// shmRefused sends in from region slot s (the region holding the tensor's
// bytes from its start) and checks the server refuses it with a client
// error and is still live.
func shmRefused(ctx context.Context, grpc bool, in tensor.Tensor, regSize int, s shmSlot) {
	AfterNegative()
	raw, _ := tensor.EncodeRaw(in)
	m, r, ok := shmNewRegion(ctx, grpc, regSize, 0, regSize)
	if !ok {
		return
	}
	copy(m.Bytes(), raw)
	s.region = r
	Verify(shmIdentity(ctx, grpc, in, &s, nil)).To(BeRejected(), fmt.Sprintf("%s INPUT0 of %d bytes at %s of a %d-byte region", in.Datatype, len(raw), &s, regSize))
}

// shmEdgeRegion is the size of the regions the edge specs use.
const shmEdgeRegion = 128

// The spec bodies; ext_shm.go declares the specs (shmDataSpecs).

func shmReadDtype(ctx context.Context, grpc bool, d tensor.Datatype) {
	needIdentity(d)
	shmReadAt(ctx, grpc, shmSample(grpc, d), 0, shmEdgeRegion, 0)
}

func shmWriteDtype(ctx context.Context, grpc bool, d tensor.Datatype) {
	needIdentity(d)
	in := shmSample(grpc, d)
	want := identityOutput(in)
	raw, _ := tensor.EncodeRaw(want)
	var inS *shmSlot
	if noJSON(grpc, d) {
		mIn, inR, ok := shmNewRegion(ctx, grpc, len(raw), 0, len(raw))
		if !ok {
			return
		}
		copy(mIn.Bytes(), raw)
		inS = &shmSlot{inR, 0, len(raw)}
	}
	m, r, ok := shmNewRegion(ctx, grpc, shmEdgeRegion, 0, shmEdgeRegion)
	if !ok {
		return
	}
	out := &shmSlot{r, 0, len(raw)}
	shmWritten(shmIdentity(ctx, grpc, in, inS, out), m, 0, want, out)
}

// The edges use identity_int32: 24 bytes, a 4-byte type.
const shmEdgeType = tensor.Int32

func shmReadAligned(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	shmReadAt(ctx, grpc, sample("INPUT0", shmEdgeType), 0, shmEdgeRegion, 64)
}

func shmReadUnaligned(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	AfterNegative()
	in := sample("INPUT0", shmEdgeType)
	raw, _ := tensor.EncodeRaw(in)
	m, r, ok := shmNewRegion(ctx, grpc, shmEdgeRegion, 0, shmEdgeRegion)
	if !ok {
		return
	}
	copy(m.Bytes()[3:], raw)
	if !inlineRight(ctx, grpc, in, "OIP-EXT-SHM-002") {
		return
	}
	s := &shmSlot{r, 3, len(raw)}
	// No alignment rule binds the client: the value must be right when
	// accepted; a refusal must be a client error.
	x := shmIdentity(ctx, grpc, in, s, nil)
	if !succeeded(x.(Evidencer)) {
		Verify(x).To(BeRejected(), fmt.Sprintf("INT32 INPUT0 at %s", s))
		return
	}
	shmSameOutput(x, identityOutput(in))
}

// shmSameOutput checks the inline OUTPUT0 of answer x.
func shmSameOutput(x any, want tensor.Tensor) {
	if e, isEx := x.(*Exchange); isEx {
		Verify(e).To(HaveOutputsNear(want))
		return
	}
	Verify(x).To(HaveOutputs(want))
}

func shmReadAtEnd(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	in := sample("INPUT0", shmEdgeType)
	shmReadAt(ctx, grpc, in, 0, shmEdgeRegion, shmEdgeRegion-tensor.RawSize(in))
}

func shmRefuseOnePast(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	in := sample("INPUT0", shmEdgeType)
	n := tensor.RawSize(in)
	shmRefused(ctx, grpc, in, shmEdgeRegion, shmSlot{offset: shmEdgeRegion - n + 1, size: n})
}

func shmRefuseBeyond(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	in := sample("INPUT0", shmEdgeType)
	shmRefused(ctx, grpc, in, shmEdgeRegion, shmSlot{offset: shmEdgeRegion + 1, size: tensor.RawSize(in)})
}

func shmRefuseShortSize(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	in := sample("INPUT0", shmEdgeType)
	shmRefused(ctx, grpc, in, shmEdgeRegion, shmSlot{size: tensor.RawSize(in) - 1})
}

func shmWriteAtOffset(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	in := sample("INPUT0", shmEdgeType)
	want := identityOutput(in)
	m, r, ok := shmNewRegion(ctx, grpc, shmEdgeRegion, 0, shmEdgeRegion)
	if !ok {
		return
	}
	out := &shmSlot{r, 64, tensor.RawSize(want)}
	shmWritten(shmIdentity(ctx, grpc, in, nil, out), m, 64, want, out)
}

func shmRefuseSmallOutput(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	AfterNegative()
	in := sample("INPUT0", shmEdgeType)
	n := tensor.RawSize(identityOutput(in)) - 1
	_, r, ok := shmNewRegion(ctx, grpc, n, 0, n)
	if !ok {
		return
	}
	out := &shmSlot{r, 0, n}
	Verify(shmIdentity(ctx, grpc, in, nil, out)).To(BeRejected(), fmt.Sprintf("INT32 OUTPUT0 of %d bytes into %s", n+1, out))
}

// shmReadRegisterOffset registers a region one page into its object,
// whose first page holds other bytes, so that a server reading from the
// object's start returns a wrong value.
func shmReadRegisterOffset(ctx context.Context, grpc bool) {
	needIdentity(shmEdgeType)
	in := sample("INPUT0", shmEdgeType)
	raw, _ := tensor.EncodeRaw(in)
	m, r, ok := shmNewRegion(ctx, grpc, shmPage+shmEdgeRegion, shmPage, shmEdgeRegion)
	if !ok {
		return
	}
	for i := range shmPage {
		m.Bytes()[i] = 0xa5
	}
	copy(m.Bytes()[shmPage:], raw)
	if !inlineRight(ctx, grpc, in, "OIP-EXT-SHM-007") {
		return
	}
	shmSameOutput(shmIdentity(ctx, grpc, in, &shmSlot{r, 0, len(raw)}, nil), identityOutput(in))
}

// grpcSHMRegisterRaw sends SystemSharedMemoryRegister as given,
// unregistering the name after the spec should the server accept it.
func grpcSHMRegisterRaw(ctx context.Context, name, key string, offset, size uint64) *Call {
	_, c := Invoke(ctx, "SystemSharedMemoryRegister", &pb.SystemSharedMemoryRegisterRequest{Name: name, Key: key, Offset: offset, ByteSize: size}, Stub().SystemSharedMemoryRegister)
	if c.Err == nil {
		PutBack(UnsentCall("SystemSharedMemoryUnregister", &pb.SystemSharedMemoryUnregisterRequest{Name: name}))
	}
	return c
}

// grpcSHMRegisterRefused checks a malformed register of a 64-byte object
// is refused with a client error: the key, offset and byte size are what
// edit makes of the object's.
func grpcSHMRegisterRefused(ctx context.Context, edit func(key string) (string, uint64, uint64)) {
	AfterNegative()
	m := shmObject(64)
	key, off, size := edit(m.Key)
	Verify(grpcSHMRegisterRaw(ctx, shmRegionName("bad"), key, off, size)).To(BeRejected(), fmt.Sprintf("key %q offset %d byte_size %d of a 64-byte object", key, off, size))
}

func grpcSHMRegisterTwice(ctx context.Context) {
	AfterNegative()
	m := shmObject(64)
	r := shmRegionName("twice")
	if !Verify(grpcSHMRegisterRaw(ctx, r, m.Key, 0, 64)).To(BeOK(), "the first registration must succeed") {
		return
	}
	Verify(grpcSHMRegisterRaw(ctx, r, m.Key, 0, 64)).To(BeRejected())
}

func grpcSHMStatusUnknown(ctx context.Context) {
	AfterNegative()
	_, c := grpcSHMStatus(ctx, shmRegionName("nope"))
	Verify(c).To(BeRejected())
}

// grpcSHMUnregisterUnknown: the clause names no error for it, and Triton
// answers OK; a refusal must still be a client error, not a server fault.
func grpcSHMUnregisterUnknown(ctx context.Context) {
	AfterNegative()
	_, c := Invoke(ctx, "SystemSharedMemoryUnregister", &pb.SystemSharedMemoryUnregisterRequest{Name: shmRegionName("nope")}, Stub().SystemSharedMemoryUnregister)
	if c.Err != nil {
		Verify(c).To(BeRejected())
	}
}

// inlineRight sends in inline to its identity fixture, the control of a
// shared-memory read: when the inline answer is wrong too, the server's
// output path is broken (the inference specs report that), and a wrong
// answer read from a region would charge that one defect to shared memory
// as well, so the spec notes it under id and checks nothing more.
func inlineRight(ctx context.Context, grpc bool, in tensor.Tensor, id string) bool {
	want := identityOutput(in)
	// Asked as the region read is: typed contents over gRPC (a region
	// carries none, so the answer is typed), binary data over REST for the
	// types JSON cannot carry.
	var x any
	m := HaveOutputs(want)
	switch {
	case grpc:
		half := in.Datatype == tensor.FP16 || in.Datatype == tensor.BF16 // no typed field
		_, x = Infer(ctx, PBRequest(identityFixture(in.Datatype), half, in))
	case noJSON(false, in.Datatype):
		b := Request()
		if err := b.AddBinary(in); err != nil {
			Fail("suite: " + err.Error())
		}
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": Obj{"binary_data": true}}}
		x = Post(ctx, identityFixture(in.Datatype), "", b)
	default:
		x = shmIdentity(ctx, false, in, nil, nil)
		m = HaveOutputsNear(want)
	}
	if ok, err := m.Match(x); err == nil && ok {
		return true
	}
	Note(id, "the %s input sent inline is answered wrong too, so the region read is not graded (the inference specs report the output defect)", in.Datatype)
	return false
}
