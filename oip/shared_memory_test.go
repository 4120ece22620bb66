package oip

import (
	"errors"
	"testing"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

func shmParamsPB(region string, size int64) map[string]*inferencepb.InferParameter {
	return map[string]*inferencepb.InferParameter{
		ParamSharedMemoryRegion:   {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: region}},
		ParamSharedMemoryByteSize: {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: size}},
	}
}

// raw_input_contents beside inputs in shared memory: one entry per input
// (empty for those in shared memory) or one per input the message carries.
func TestFromProtoRequestSharedMemory(t *testing.T) {
	in := func(name string, shm bool) *inferencepb.ModelInferRequest_InferInputTensor {
		t := &inferencepb.ModelInferRequest_InferInputTensor{Name: name, Datatype: "INT32", Shape: []int64{2}}
		if shm {
			t.Parameters = shmParamsPB("r", 8)
		}
		return t
	}
	two := []byte{1, 0, 0, 0, 2, 0, 0, 0}
	for _, c := range []struct {
		name string
		raw  [][]byte
		ok   bool
	}{
		{"compact", [][]byte{two}, true},
		{"aligned", [][]byte{{}, two}, true},
		{"aligned with data for the region", [][]byte{two, two}, false},
		{"too many", [][]byte{two, two, two}, false},
	} {
		pb := &inferencepb.ModelInferRequest{ModelName: "m", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in("A", true), in("B", false)}, RawInputContents: c.raw}
		req, _, err := FromProtoRequest(pb, Limits{})
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: %v does not wrap ErrInvalid", c.name, err)
			}
			continue
		}
		if req.Inputs[0].Data != nil || !InSharedMemory(req.Inputs[0].Parameters) || req.Inputs[1].Len() != 2 {
			t.Errorf("%s: inputs %+v", c.name, req.Inputs)
		}
	}
	pb := &inferencepb.ModelInferRequest{ModelName: "m", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in("A", true)}}
	pb.Inputs[0].Contents = &inferencepb.InferTensorContents{IntContents: []int32{1, 2}}
	if _, _, err := FromProtoRequest(pb, Limits{}); err == nil {
		t.Error("contents beside a region accepted")
	}
}

// REST: a tensor in shared memory has no data; data beside a region is
// refused in requests.
func TestRESTSharedMemory(t *testing.T) {
	req, err := DecodeRESTRequest([]byte(`{"inputs":[{"name":"A","datatype":"FP32","shape":[4],"parameters":{"shared_memory_region":"r","shared_memory_byte_size":16}}]}`), -1, Limits{})
	if err != nil || req.Inputs[0].Data != nil || !InSharedMemory(req.Inputs[0].Parameters) {
		t.Fatalf("%+v, %v", req, err)
	}
	if _, err := DecodeRESTRequest([]byte(`{"inputs":[{"name":"A","datatype":"FP32","shape":[1],"data":[1],"parameters":{"shared_memory_region":"r","shared_memory_byte_size":4}}]}`), -1, Limits{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("data beside a region: %v", err)
	}
	body, hl, err := EncodeRESTRequest(req, RESTEncoding{BinaryInputs: true})
	if err != nil || hl != -1 {
		t.Fatalf("encode: %v (header length %d)", err, hl)
	}
	back, err := DecodeRESTRequest(body, hl, Limits{})
	if err != nil || back.Inputs[0].Data != nil {
		t.Errorf("round trip %s: %+v, %v", body, back, err)
	}
	for _, c := range []struct {
		p  Parameters
		ok bool
	}{
		{Parameters{ParamSharedMemoryRegion: "r", ParamSharedMemoryByteSize: int64(4)}, true},
		{Parameters{ParamSharedMemoryRegion: "r"}, false},
		{Parameters{ParamSharedMemoryByteSize: int64(4)}, false},
		{Parameters{ParamSharedMemoryRegion: "", ParamSharedMemoryByteSize: int64(4)}, false},
		{Parameters{ParamSharedMemoryRegion: "r", ParamSharedMemoryByteSize: int64(-4)}, false},
		{Parameters{ParamSharedMemoryRegion: "r", ParamSharedMemoryByteSize: int64(4), ParamSharedMemoryOffset: "x"}, false},
	} {
		if _, _, err := SharedMemoryOf(c.p); (err == nil) != c.ok {
			t.Errorf("%v: %v", c.p, err)
		}
	}
}
