package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/client"
	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-EXT-SHM: the shared memory extensions (Triton's). The suite creates
// its own POSIX shared memory objects (/dev/shm/oipkit_conform_<pid>_<n>),
// registers byte ranges of them as regions named oipkit_*, and removes both
// after each spec. A server can map them only when it runs on this host, so
// every spec that needs a region is skipped, with the reason, when the
// target's address is not a loopback one. CUDA shared memory
// (OIP-EXT-SHM-011) needs a GPU on both sides and is not tested.

// The probe asks for the system shared memory status over REST, then gRPC.
var _ = RegisterProbe(specs.ExtSystemSharedMemory, func(ctx context.Context, p *Prober) ProbeResult {
	return p.RESTThenGRPC(ctx, func(ctx context.Context) ProbeResult {
		e := p.Get(ctx, "/v2/systemsharedmemory/status")
		switch {
		case e.Err != nil:
			return Unanswered()
		case shmStatusObserved(e):
			return Observed(e, "GET /v2/systemsharedmemory/status answered a list of regions")
		}
		return Absent(e, "GET /v2/systemsharedmemory/status: %s", clipped(e.Got(), 160))
	}, func(ctx context.Context) ProbeResult {
		resp := &pb.SystemSharedMemoryStatusResponse{}
		c := p.Call(ctx, "SystemSharedMemoryStatus", &pb.SystemSharedMemoryStatusRequest{}, resp)
		switch {
		case GRPCNoAnswer(c.Err) != nil:
			return Unanswered()
		case c.Err == nil:
			return Observed(c, "SystemSharedMemoryStatus answered")
		}
		return Absent(c, "SystemSharedMemoryStatus{}: %s", clipped(c.Got(), 160))
	}, "no answer to the system shared memory status")
})

var shmSeq atomic.Int64

// shmObject creates a shared memory object of size bytes for the running
// spec, removed after it; the spec is skipped when the target cannot map it.
func shmObject(size int) *client.SharedMemory {
	if !Current().Loopback() {
		Skip(SkipNotApplicable + "the target's address is not a loopback one: a server on another host cannot map shared memory the suite creates")
	}
	key := fmt.Sprintf("/oipkit_conform_%d_%d", os.Getpid(), shmSeq.Add(1))
	m, err := client.CreateSharedMemory(key, size)
	if err != nil {
		Skip(SkipNotApplicable + "cannot create POSIX shared memory on this host: " + err.Error())
	}
	// A finding's reproducer makes the object as it is when the finding is
	// recorded; one recorded after the object is gone (a liveness check
	// after the spec) gets it as it was last.
	path, last := m.Path(), []byte(nil)
	ReplaySetup(nil, func() string {
		data := m.Bytes()
		if data == nil {
			data = last
		}
		return "# run on the server's host: the server maps the object by its name\n" + report.WriteFileCommand(path, data)
	}, report.RemoveFileCommand(path))
	DeferCleanup(func() {
		last = bytes.Clone(m.Bytes())
		m.Close()
	})
	return m
}

// shmRegionName is a region name of the running spec.
func shmRegionName(what string) string {
	return fmt.Sprintf("oipkit_%s_%d_%d", what, os.Getpid(), shmSeq.Add(1))
}

// shmRegister registers size bytes at offset of m as region name over REST;
// the region is unregistered after the spec.
func shmRegister(ctx context.Context, name string, m *client.SharedMemory, offset, size int) *Exchange {
	body, _ := json.Marshal(map[string]any{"key": m.Key, "offset": offset, "byte_size": size})
	e := Do(ctx, http.MethodPost, "/v2/systemsharedmemory/region/"+PathEscape(name)+"/register", jsonHeader(), body)
	if e.Status == http.StatusOK {
		ReplaySetup(e, func() string { return Reproducer(e) }, "")
		PutBack(shmUnregisterRequest(name))
	}
	return e
}

// shmUnregister unregisters region name ("" for all) with an empty body.
func shmUnregister(ctx context.Context, name string) *Exchange {
	return Send(ctx, shmUnregisterRequest(name)).(*Exchange)
}

// shmUnregisterRequest is shmUnregister's request, unsent.
func shmUnregisterRequest(name string) *Exchange {
	path := "/v2/systemsharedmemory/unregister"
	if name != "" {
		path = "/v2/systemsharedmemory/region/" + PathEscape(name) + "/unregister"
	}
	return UnsentRequest(http.MethodPost, path, nil, nil)
}

// region is one region of a status answer.
type region = oip.SystemSharedMemoryRegion

// shmStatusObserved reports whether a probe's answer is a status: a list
// of regions the schema accepts, or a JSON array it does not (the
// extension is there; its specs grade the body).
func shmStatusObserved(e *Exchange) bool {
	var list []region
	err := DecodeBody(e, &list)
	return err == nil || errors.Is(err, ErrBodyBreaksSchema) && bytes.HasPrefix(bytes.TrimSpace(e.Body), []byte("["))
}

// shmLists reads status answer e for c, a check of e (ReadBody: a body the
// schema refuses is graded by it, not here), and checks that it lists
// exactly the regions want among the suite's own (regions of other names
// are ignored when others), and not gone ("" for none).
func shmLists(c *Check, e *Exchange, want []region, others bool, gone string) bool {
	got, ok := ReadBody[[]region](c)
	return ok && c.To(PassCheck(func(*Exchange) error {
		for _, s := range got {
			if gone != "" && s.Name == gone {
				return fmt.Errorf("%s still lists %s after POST .../region/%s/unregister", e.What(), gone, gone)
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return fmt.Errorf("%s lists %+v; want region %+v among them", e.What(), got, w)
			}
		}
		if !others && len(got) != len(want) {
			return fmt.Errorf("%s lists %d regions %+v, want only %+v", e.What(), len(got), got, want)
		}
		return nil
	}))
}

// shmInput is an add_sub input in region at offset (the catalog's
// parameters; byte size -1 leaves it out).
func shmInput(t tensor.Tensor, region string, offset, size int) Obj {
	p := Obj{"shared_memory_region": region}
	if offset != 0 {
		p["shared_memory_offset"] = offset
	}
	if size >= 0 {
		p["shared_memory_byte_size"] = size
	}
	return Obj{"name": t.Name, "datatype": string(t.Datatype), "shape": t.Shape, "parameters": p}
}

// shmInputs places add_sub's canonical inputs at offsets 0 and 64 of a new
// 128-byte region, registered over REST; ok is false (recorded under the
// spec's requirement) when the registration fails.
func shmInputs(ctx context.Context) (region string, in0, in1, out0, out1 tensor.Tensor, ok bool) {
	in0, in1 = addSubInputs(1)
	out0, out1 = addSubOutputs(in0, in1)
	m := shmObject(128)
	r0, _ := tensor.EncodeRaw(in0)
	r1, _ := tensor.EncodeRaw(in1)
	copy(m.Bytes(), r0)
	copy(m.Bytes()[64:], r1)
	region = shmRegionName("in")
	ok = Verify(shmRegister(ctx, region, m, 0, 128)).To(HaveStatus(http.StatusOK), "registering the inputs' region must succeed for the inference to be checked")
	return region, in0, in1, out0, out1, ok
}

// shmRegisterRaw posts body as it is to region r's register route, and
// unregisters r after the spec should the server accept it.
func shmRegisterRaw(ctx context.Context, r string, body []byte) *Exchange {
	e := Do(ctx, http.MethodPost, "/v2/systemsharedmemory/region/"+PathEscape(r)+"/register", jsonHeader(), body)
	if e.Status == http.StatusOK {
		PutBack(shmUnregisterRequest(r))
	}
	return e
}

var _ = Describe("REST system shared memory", Over(TransportREST), Needs(specs.ExtSystemSharedMemory), func() {
	It("advertises system_shared_memory in server metadata", Req("OIP-EXT-SHM-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtSystemSharedMemory)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtSystemSharedMemory)
		}))
	})

	It("registers a region and lists it", Req("OIP-EXT-SHM-007"), func(ctx SpecContext) {
		m := shmObject(64)
		r1 := shmRegionName("r1")
		if !Verify(shmRegister(ctx, r1, m, 0, 64)).To(HaveStatus(http.StatusOK)) {
			return
		}
		e := Get(ctx, "/v2/systemsharedmemory/region/"+PathEscape(r1)+"/status")
		shmLists(Verify(e), e, []region{{Name: r1, Key: m.Key, ByteSize: 64}}, false, "")
	})

	It("lists every region, and one region on its route", Req("OIP-EXT-SHM-006"), func(ctx SpecContext) {
		m, m2 := shmObject(64), shmObject(2*shmPage)
		r1, r2 := shmRegionName("r1"), shmRegionName("r2")
		if !Verify(shmRegister(ctx, r1, m, 0, 64)).To(HaveStatus(http.StatusOK), "registration is needed to check the status") ||
			!Verify(shmRegister(ctx, r2, m2, shmPage, 64)).To(HaveStatus(http.StatusOK), "registration is needed to check the status") {
			return
		}
		all := Get(ctx, "/v2/systemsharedmemory/status")
		shmLists(Verify(all), all, []region{{Name: r1, Key: m.Key, ByteSize: 64}, {Name: r2, Key: m2.Key, Offset: shmPage, ByteSize: 64}}, true, "")
		one := Get(ctx, "/v2/systemsharedmemory/region/"+PathEscape(r1)+"/status")
		shmLists(Verify(one), one, []region{{Name: r1, Key: m.Key, ByteSize: 64}}, false, "")
	})

	// Both regions start at offset 0: how a status lists an offset is
	// OIP-EXT-SHM-006's to check, not a failure of unregistering.
	It("unregisters one region, then every region", Req("OIP-EXT-SHM-008"), func(ctx SpecContext) {
		m, m2 := shmObject(64), shmObject(64)
		r1, r2 := shmRegionName("r1"), shmRegionName("r2")
		if !Verify(shmRegister(ctx, r1, m, 0, 64)).To(HaveStatus(http.StatusOK), "registration is needed to check unregistering") ||
			!Verify(shmRegister(ctx, r2, m2, 0, 64)).To(HaveStatus(http.StatusOK), "registration is needed to check unregistering") {
			return
		}
		Verify(shmUnregister(ctx, r1)).To(HaveStatus(http.StatusOK))
		e := Get(ctx, "/v2/systemsharedmemory/status")
		shmLists(Verify(e), e, []region{{Name: r2, Key: m2.Key, ByteSize: 64}}, true, r1)
		Verify(shmUnregister(ctx, "")).To(HaveStatus(http.StatusOK))
		none := Get(ctx, "/v2/systemsharedmemory/status")
		shmLists(Verify(none), none, nil, false, "")
	})

	It("answers failed calls with an error status and {\"error\": string}", Req("OIP-EXT-SHM-012"), func(ctx SpecContext) {
		m := shmObject(64)
		body, _ := json.Marshal(map[string]any{"key": m.Key + "_missing", "offset": 0, "byte_size": 64})
		r := shmRegionName("bad")
		e := Do(ctx, http.MethodPost, "/v2/systemsharedmemory/region/"+PathEscape(r)+"/register", jsonHeader(), body)
		if e.Status == http.StatusOK {
			PutBack(shmUnregisterRequest(r))
		}
		Verify(e).To(BeErrorResponse())
		Verify(Get(ctx, "/v2/systemsharedmemory/region/"+PathEscape(shmRegionName("nope"))+"/status")).To(BeErrorResponse())
	})

	It("answers a register request whose body is not JSON with an error status and {\"error\": string}", Req("OIP-EXT-SHM-012"), func(ctx SpecContext) {
		AfterNegative()
		Verify(shmRegisterRaw(ctx, shmRegionName("notjson"), []byte(`{"key":`))).To(BeErrorResponse())
	})

	It("answers a register request whose members have the wrong types with an error status and {\"error\": string}", Req("OIP-EXT-SHM-012"), func(ctx SpecContext) {
		AfterNegative()
		Verify(shmRegisterRaw(ctx, shmRegionName("types"), []byte(`{"key": 64, "offset": "0", "byte_size": "64"}`))).To(BeErrorResponse())
	})

	It("reads inputs from a region; region and byte size go together", Req("OIP-EXT-SHM-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		region, in0, in1, out0, out1, ok := shmInputs(ctx)
		if !ok {
			return
		}
		e := Post(ctx, "add_sub", "", Request(shmInput(in0, region, 0, 64), shmInput(in1, region, 64, 64)))
		if Verify(e).To(HaveStatus(http.StatusOK)) {
			Verify(e).To(PassCheck(func(r *InferResponse) error {
				for _, want := range []tensor.Tensor{out0, out1} {
					got, err := r.Tensor(want.Name)
					if err != nil {
						return err
					}
					if !reflect.DeepEqual(got.Data, want.Data) {
						return fmt.Errorf("%s from inputs in shared memory is %v, want %v", want.Name, got.Data, want.Data)
					}
				}
				return nil
			}))
		}
		Verify(Post(ctx, "add_sub", "", Request(shmInput(in0, region, 0, -1), shmInput(in1, region, 64, 64)))).To(BeRejected())
	})

	It("refuses an input that names a region and carries data", Req("OIP-EXT-SHM-003"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		region, in0, in1, _, _, ok := shmInputs(ctx)
		if !ok {
			return
		}
		both := shmInput(in0, region, 0, 64)
		both["data"] = JSONValues(in0)
		Verify(Post(ctx, "add_sub", "", Request(both, shmInput(in1, region, 64, 64)))).To(BeRejected())
	})

	It("writes an output into a region and leaves data out of the response", Req("OIP-EXT-SHM-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		m := shmObject(64)
		region := shmRegionName("out")
		if !Verify(shmRegister(ctx, region, m, 0, 64)).To(HaveStatus(http.StatusOK), "registering the output region must succeed") {
			return
		}
		b, out0, _ := addSubRequest()
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": Obj{"shared_memory_region": region, "shared_memory_byte_size": 64}}}
		e := Post(ctx, "add_sub", "", b)
		if !Verify(e).To(HaveStatus(http.StatusOK)) {
			return
		}
		Verify(e).To(PassCheck(func(r *InferResponse) error {
			o := r.Output("OUTPUT0")
			if o == nil {
				return errors.New("the response has no OUTPUT0")
			}
			if _, has := o.Fields["data"]; has {
				return errors.New(`OUTPUT0 was requested in shared memory but the response carries its "data"`)
			}
			want, _ := tensor.EncodeRaw(out0)
			if got := m.Bytes()[:len(want)]; !bytes.Equal(got, want) {
				return fmt.Errorf("the region holds % x, want OUTPUT0 = %v (% x)", clipBytes(got), out0.Data, clipBytes(want))
			}
			return nil
		}))
	})

	It("refuses a region that is not registered", Req("OIP-EXT-SHM-005"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		in0, in1 := addSubInputs(1)
		nope := shmRegionName("nope")
		Verify(Post(ctx, "add_sub", "", Request(shmInput(in0, nope, 0, 64), shmInput(in1, nope, 0, 64)))).To(BeRejected())
	})

	It("refuses a region after it is unregistered", Req("OIP-EXT-SHM-009"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		region, in0, in1, _, _, ok := shmInputs(ctx)
		if !ok {
			return
		}
		if !Verify(shmUnregister(ctx, region)).To(HaveStatus(http.StatusOK), "unregistering must succeed") {
			return
		}
		Verify(Post(ctx, "add_sub", "", Request(shmInput(in0, region, 0, 64), shmInput(in1, region, 64, 64)))).To(BeRejected())
	})

	It("refuses to register a name twice", Req("OIP-EXT-SHM-010"), func(ctx SpecContext) {
		m := shmObject(64)
		r1 := shmRegionName("r1")
		if !Verify(shmRegister(ctx, r1, m, 0, 64)).To(HaveStatus(http.StatusOK), "the first registration must succeed") {
			return
		}
		Verify(shmRegister(ctx, r1, m, 0, 64)).To(BeRejected())
	})
})

func clipBytes(b []byte) []byte { return b[:min(len(b), 16)] }

// grpcSHMRegister registers a region over gRPC, unregistered after the spec.
func grpcSHMRegister(ctx context.Context, name string, m *client.SharedMemory, offset, size uint64) *Call {
	_, c := Invoke(ctx, "SystemSharedMemoryRegister", &pb.SystemSharedMemoryRegisterRequest{Name: name, Key: m.Key, Offset: offset, ByteSize: size}, Stub().SystemSharedMemoryRegister)
	if c.Err == nil {
		ReplaySetup(c, func() string { return Reproducer(c) }, "")
		PutBack(UnsentCall("SystemSharedMemoryUnregister", &pb.SystemSharedMemoryUnregisterRequest{Name: name}))
	}
	return c
}

func grpcSHMStatus(ctx context.Context, name string) (*pb.SystemSharedMemoryStatusResponse, *Call) {
	return Invoke(ctx, "SystemSharedMemoryStatus", &pb.SystemSharedMemoryStatusRequest{Name: name}, Stub().SystemSharedMemoryStatus)
}

// grpcRegions checks that a status lists exactly want (others allowed when
// others is true).
func grpcRegions(want map[string]*pb.SystemSharedMemoryStatusResponse_RegionStatus, others bool) func(*pb.SystemSharedMemoryStatusResponse) error {
	return func(r *pb.SystemSharedMemoryStatusResponse) error {
		got := r.GetRegions()
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				return fmt.Errorf("regions has no %q (it lists %d)", name, len(got))
			}
			if g.GetName() != w.GetName() || g.GetKey() != w.GetKey() || g.GetOffset() != w.GetOffset() || g.GetByteSize() != w.GetByteSize() {
				return fmt.Errorf("regions[%q] is %v, want %v", name, g, w)
			}
		}
		if !others && len(got) != len(want) {
			return fmt.Errorf("regions lists %d regions, want %d", len(got), len(want))
		}
		return nil
	}
}

func shmParams(region string, offset, size int64) map[string]*pb.InferParameter {
	p := map[string]*pb.InferParameter{
		"shared_memory_region":    {ParameterChoice: &pb.InferParameter_StringParam{StringParam: region}},
		"shared_memory_byte_size": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: size}},
	}
	if offset != 0 {
		p["shared_memory_offset"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: offset}}
	}
	return p
}

// pbSHMAddSub is add_sub with its inputs at offsets 0 and 64 of region.
func pbSHMAddSub(region string) *pb.ModelInferRequest {
	in := func(name string, off int64) *pb.ModelInferRequest_InferInputTensor {
		return &pb.ModelInferRequest_InferInputTensor{Name: name, Datatype: "INT32", Shape: []int64{1, 16}, Parameters: shmParams(region, off, 64)}
	}
	return &pb.ModelInferRequest{Id: RequestID, ModelName: "add_sub", Inputs: []*pb.ModelInferRequest_InferInputTensor{in("INPUT0", 0), in("INPUT1", 64)}}
}

var _ = Describe("gRPC system shared memory", Over(TransportGRPC), Needs(specs.ExtSystemSharedMemory), func() {
	It("advertises system_shared_memory in server metadata", Req("OIP-EXT-SHM-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtSystemSharedMemory)
		}))
	})

	It("registers, lists and unregisters regions", Req("OIP-EXT-SHM-013"), func(ctx SpecContext) {
		m, m2 := shmObject(64), shmObject(2*shmPage)
		r1, r2 := shmRegionName("r1"), shmRegionName("r2")
		if !Verify(grpcSHMRegister(ctx, r1, m, 0, 64)).To(BeOK()) ||
			!Verify(grpcSHMRegister(ctx, r2, m2, shmPage, 64)).To(BeOK()) {
			return
		}
		s1 := &pb.SystemSharedMemoryStatusResponse_RegionStatus{Name: r1, Key: m.Key, Offset: 0, ByteSize: 64}
		s2 := &pb.SystemSharedMemoryStatusResponse_RegionStatus{Name: r2, Key: m2.Key, Offset: shmPage, ByteSize: 64}
		_, c := grpcSHMStatus(ctx, "")
		Verify(c).To(PassCheck(grpcRegions(map[string]*pb.SystemSharedMemoryStatusResponse_RegionStatus{r1: s1, r2: s2}, true)))
		_, c = grpcSHMStatus(ctx, r1)
		Verify(c).To(PassCheck(grpcRegions(map[string]*pb.SystemSharedMemoryStatusResponse_RegionStatus{r1: s1}, false)))
		_, c = Invoke(ctx, "SystemSharedMemoryUnregister", &pb.SystemSharedMemoryUnregisterRequest{Name: r1}, Stub().SystemSharedMemoryUnregister)
		Verify(c).To(BeOK())
		_, c = grpcSHMStatus(ctx, "")
		Verify(c).To(PassCheck(func(r *pb.SystemSharedMemoryStatusResponse) error {
			if _, still := r.GetRegions()[r1]; still {
				return fmt.Errorf("regions still lists %q after SystemSharedMemoryUnregister{%q}", r1, r1)
			}
			return nil
		}))
		_, c = Invoke(ctx, "SystemSharedMemoryUnregister", &pb.SystemSharedMemoryUnregisterRequest{}, Stub().SystemSharedMemoryUnregister)
		Verify(c).To(BeOK())
		_, c = grpcSHMStatus(ctx, "")
		Verify(c).To(PassCheck(grpcRegions(nil, false)))
	})

	It("reads inputs from and writes outputs to regions", Req("OIP-EXT-SHM-002", "OIP-EXT-SHM-004", "OIP-EXT-SHM-013"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		in0, in1 := addSubInputs(1)
		out0, _ := addSubOutputs(in0, in1)
		m, mOut := shmObject(128), shmObject(64)
		r0, _ := tensor.EncodeRaw(in0)
		r1, _ := tensor.EncodeRaw(in1)
		copy(m.Bytes(), r0)
		copy(m.Bytes()[64:], r1)
		inR, outR := shmRegionName("in"), shmRegionName("out")
		if !VerifyReq("OIP-EXT-SHM-013", grpcSHMRegister(ctx, inR, m, 0, 128)).To(BeOK()) ||
			!VerifyReq("OIP-EXT-SHM-013", grpcSHMRegister(ctx, outR, mOut, 0, 64)).To(BeOK()) {
			return
		}
		req := pbSHMAddSub(inR)
		req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0", Parameters: shmParams(outR, 0, 64)}}
		_, c := Infer(ctx, req)
		if !VerifyReq("OIP-EXT-SHM-002", c).To(BeOK()) {
			return
		}
		VerifyReq("OIP-EXT-SHM-004", c).To(PassCheck(func(r *pb.ModelInferResponse) error {
			for i, o := range r.GetOutputs() {
				if o.GetName() != "OUTPUT0" {
					continue
				}
				if o.GetContents() != nil && contentsCount(o.GetContents()) > 0 || i < len(r.GetRawOutputContents()) && len(r.GetRawOutputContents()[i]) > 0 {
					return errors.New("OUTPUT0 was requested in shared memory but the response carries its contents")
				}
				want, _ := tensor.EncodeRaw(out0)
				if got := mOut.Bytes()[:len(want)]; !bytes.Equal(got, want) {
					return fmt.Errorf("the region holds % x, want OUTPUT0 = %v", clipBytes(got), out0.Data)
				}
				return nil
			}
			return errors.New("the response has no OUTPUT0")
		}))
		bad := pbSHMAddSub(inR)
		delete(bad.Inputs[0].Parameters, "shared_memory_byte_size")
		_, c = Infer(ctx, bad)
		VerifyReq("OIP-EXT-SHM-002", c).To(BeRejected())
	})

	It("refuses contents beside a region, and regions not registered", Req("OIP-EXT-SHM-003", "OIP-EXT-SHM-005", "OIP-EXT-SHM-009"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		in0, in1 := addSubInputs(1)
		m := shmObject(128)
		r0, _ := tensor.EncodeRaw(in0)
		r1, _ := tensor.EncodeRaw(in1)
		copy(m.Bytes(), r0)
		copy(m.Bytes()[64:], r1)
		region := shmRegionName("in")
		if !VerifyReq("OIP-EXT-SHM-003", grpcSHMRegister(ctx, region, m, 0, 128)).To(BeOK(), "registering the inputs' region must succeed") {
			return
		}
		both := pbSHMAddSub(region)
		both.Inputs[0].Contents = &pb.InferTensorContents{IntContents: in0.Data.([]int32)}
		_, c := Infer(ctx, both)
		VerifyReq("OIP-EXT-SHM-003", c).To(BeRejected())
		_, c = Infer(ctx, pbSHMAddSub(shmRegionName("nope")))
		VerifyReq("OIP-EXT-SHM-005", c).To(BeRejected())
		_, c = Invoke(ctx, "SystemSharedMemoryUnregister", &pb.SystemSharedMemoryUnregisterRequest{Name: region}, Stub().SystemSharedMemoryUnregister)
		if VerifyReq("OIP-EXT-SHM-009", c).To(BeOK(), "unregistering must succeed") {
			_, c = Infer(ctx, pbSHMAddSub(region))
			VerifyReq("OIP-EXT-SHM-009", c).To(BeRejected())
		}
	})
})

// contentsCount is the number of values in typed contents.
func contentsCount(c *pb.InferTensorContents) int {
	return len(c.GetBoolContents()) + len(c.GetIntContents()) + len(c.GetInt64Contents()) + len(c.GetUintContents()) +
		len(c.GetUint64Contents()) + len(c.GetFp32Contents()) + len(c.GetFp64Contents()) + len(c.GetBytesContents())
}

// shmPage is the offset of a region within its object: a page, because
// servers map a region with mmap, whose offset must be a multiple of the
// page size. Each region of a spec has an object of its own: Triton refuses
// a second region of an object already registered ("Invalid shared memory
// region"). The extension names neither rule; these specs check the
// status, register and unregister calls, not them.
const shmPage = 4096

// Every datatype through a region both ways, and the offsets and byte
// sizes at a region's edges, over both transports; the bodies are in
// ext_shm_data.go.
func shmDataSpecs(grpc bool) {
	for _, d := range tensor.Datatypes {
		var binary []any // FP16/BF16 come back as binary data over REST
		if noJSON(grpc, d) {
			binary = append(binary, Needs(specs.ExtBinaryTensorData))
		}
		It(fmt.Sprintf("reads a %s input from a region exactly", d), Req("OIP-EXT-SHM-002"), binary, func(ctx SpecContext) { shmReadDtype(ctx, grpc, d) })
		It(fmt.Sprintf("writes a %s output into a region exactly, with no data in the answer", d), Req("OIP-EXT-SHM-004"), func(ctx SpecContext) { shmWriteDtype(ctx, grpc, d) })
	}
	It("reads an input at a non-zero aligned offset (64)", Req("OIP-EXT-SHM-002"), func(ctx SpecContext) { shmReadAligned(ctx, grpc) })
	It("reads an input at an unaligned offset (3) exactly, or refuses it with a client error", Req("OIP-EXT-SHM-002"), func(ctx SpecContext) { shmReadUnaligned(ctx, grpc) })
	It("reads an input ending exactly at the region's end", Req("OIP-EXT-SHM-002"), func(ctx SpecContext) { shmReadAtEnd(ctx, grpc) })
	It("refuses an input ending one byte past the region's end with a client error", Req("OIP-EXT-SHM-015"), func(ctx SpecContext) { shmRefuseOnePast(ctx, grpc) })
	It("refuses an input at an offset beyond the region's end with a client error", Req("OIP-EXT-SHM-015"), func(ctx SpecContext) { shmRefuseBeyond(ctx, grpc) })
	It("refuses a byte size one less than the input needs with a client error", Req("OIP-EXT-SHM-015"), func(ctx SpecContext) { shmRefuseShortSize(ctx, grpc) })
	It("writes an output at a non-zero offset (64) of its region", Req("OIP-EXT-SHM-004"), func(ctx SpecContext) { shmWriteAtOffset(ctx, grpc) })
	It("refuses an output region one byte too small with a client error", Req("OIP-EXT-SHM-015"), func(ctx SpecContext) { shmRefuseSmallOutput(ctx, grpc) })
	It("reads an input relative to the register offset (one page into the object)", Req("OIP-EXT-SHM-007"), func(ctx SpecContext) { shmReadRegisterOffset(ctx, grpc) })
}

var _ = Describe("REST system shared memory with every datatype and edge", Over(TransportREST), Needs(specs.ExtSystemSharedMemory), func() {
	shmDataSpecs(false)
})

var _ = Describe("gRPC system shared memory with every datatype and edge", Over(TransportGRPC), Needs(specs.ExtSystemSharedMemory), func() {
	shmDataSpecs(true)
	It("refuses SystemSharedMemoryRegister of a key that does not exist", Req("OIP-EXT-SHM-013"), func(ctx SpecContext) {
		grpcSHMRegisterRefused(ctx, func(key string) (string, uint64, uint64) { return key + "_missing", 0, 64 })
	})
	It("refuses SystemSharedMemoryRegister with a byte_size of 0", Req("OIP-EXT-SHM-013"), func(ctx SpecContext) {
		grpcSHMRegisterRefused(ctx, func(key string) (string, uint64, uint64) { return key, 0, 0 })
	})
	It("refuses SystemSharedMemoryRegister at an offset past the key's size", Req("OIP-EXT-SHM-013"), func(ctx SpecContext) {
		grpcSHMRegisterRefused(ctx, func(key string) (string, uint64, uint64) { return key, 2 * shmPage, 64 })
	})
	It("refuses SystemSharedMemoryRegister of a name already registered", Req("OIP-EXT-SHM-010"), func(ctx SpecContext) { grpcSHMRegisterTwice(ctx) })
	It("refuses SystemSharedMemoryStatus of a name not registered", Req("OIP-EXT-SHM-013"), func(ctx SpecContext) { grpcSHMStatusUnknown(ctx) })
	It("answers SystemSharedMemoryUnregister of a name not registered with OK or a client error", Req("OIP-EXT-SHM-013"), func(ctx SpecContext) { grpcSHMUnregisterUnknown(ctx) })
})
