package oip

import (
	"math"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// The shared-memory extensions (Triton's system_shared_memory): tensor
// parameters that place an input's or output's data in a registered region,
// and the messages of the region calls.

// Tensor parameters of the shared-memory extensions.
const (
	ParamSharedMemoryRegion   = "shared_memory_region"
	ParamSharedMemoryOffset   = "shared_memory_offset"
	ParamSharedMemoryByteSize = "shared_memory_byte_size"
)

// InSharedMemory reports whether p places a tensor's data in a
// shared-memory region. Such a tensor carries no data in the message (its
// Data is nil): the decoders accept it without "data" or contents and the
// encoders write none.
func InSharedMemory(p Parameters) bool {
	_, ok := p[ParamSharedMemoryRegion]
	return ok
}

// SharedMemoryRef is where a tensor's data lies: ByteSize bytes at Offset in
// the registered region Region.
type SharedMemoryRef struct {
	Region   string
	Offset   int64
	ByteSize int64
}

// Params are the tensor parameters that say ref.
func (ref SharedMemoryRef) Params() Parameters {
	p := Parameters{ParamSharedMemoryRegion: ref.Region, ParamSharedMemoryByteSize: ref.ByteSize}
	if ref.Offset != 0 {
		p[ParamSharedMemoryOffset] = ref.Offset
	}
	return p
}

// SharedMemoryOf reads the shared-memory parameters of a tensor. ok is false
// when p names no region and sets neither offset nor byte size. Region and
// byte size go together (setting one without the other is an error, as in
// Triton); offset defaults to 0. Errors wrap ErrInvalid.
func SharedMemoryOf(p Parameters) (ref SharedMemoryRef, ok bool, err error) {
	region, hasRegion := p[ParamSharedMemoryRegion]
	size, hasSize := p[ParamSharedMemoryByteSize]
	offset, hasOffset := p[ParamSharedMemoryOffset]
	if !hasRegion && !hasSize && !hasOffset {
		return ref, false, nil
	}
	if !hasRegion || !hasSize {
		return ref, false, invalidf("%s and %s must be set together", ParamSharedMemoryRegion, ParamSharedMemoryByteSize)
	}
	name, isString := region.(string)
	if !isString || name == "" {
		return ref, false, invalidf("%s must be a non-empty string, got %v", ParamSharedMemoryRegion, region)
	}
	ref.Region = name
	if ref.ByteSize, err = nonNegative(ParamSharedMemoryByteSize, size); err != nil {
		return ref, false, err
	}
	if hasOffset {
		if ref.Offset, err = nonNegative(ParamSharedMemoryOffset, offset); err != nil {
			return ref, false, err
		}
	}
	return ref, true, nil
}

func nonNegative(name string, v any) (int64, error) {
	switch n := v.(type) {
	case int64:
		if n >= 0 {
			return n, nil
		}
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), nil
		}
	case float64: // a JSON number decoded as a float
		if n >= 0 && n <= math.MaxInt64 && n == math.Trunc(n) {
			return int64(n), nil
		}
	}
	return 0, invalidf("%s must be a non-negative integer, got %v", name, v)
}

// SystemSharedMemoryRegion is one entry of a system shared memory status
// answer (REST: the array items; gRPC: RegionStatus).
type SystemSharedMemoryRegion struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Offset   uint64 `json:"offset"`
	ByteSize uint64 `json:"byte_size"`
}

// SystemSharedMemoryRegister is the body of
// POST /v2/systemsharedmemory/region/{r}/register.
type SystemSharedMemoryRegister struct {
	Key      string `json:"key"`
	Offset   uint64 `json:"offset"`
	ByteSize uint64 `json:"byte_size"`
}

// SystemSharedMemoryStatusToProto converts a status answer to gRPC.
func SystemSharedMemoryStatusToProto(regions []SystemSharedMemoryRegion) *inferencepb.SystemSharedMemoryStatusResponse {
	out := &inferencepb.SystemSharedMemoryStatusResponse{Regions: make(map[string]*inferencepb.SystemSharedMemoryStatusResponse_RegionStatus, len(regions))}
	for _, r := range regions {
		out.Regions[r.Name] = &inferencepb.SystemSharedMemoryStatusResponse_RegionStatus{Name: r.Name, Key: r.Key, Offset: r.Offset, ByteSize: r.ByteSize}
	}
	return out
}

// SystemSharedMemoryStatusFromProto converts a gRPC status answer; map keys
// name the regions whose status has no name.
func SystemSharedMemoryStatusFromProto(pb *inferencepb.SystemSharedMemoryStatusResponse) []SystemSharedMemoryRegion {
	out := make([]SystemSharedMemoryRegion, 0, len(pb.GetRegions()))
	for name, r := range pb.GetRegions() {
		if r.GetName() != "" {
			name = r.GetName()
		}
		out = append(out, SystemSharedMemoryRegion{Name: name, Key: r.GetKey(), Offset: r.GetOffset(), ByteSize: r.GetByteSize()})
	}
	return out
}

// sharedMemoryTensor reports a tensor whose data is in shared memory and so
// has no data in the message.
func sharedMemoryTensor(data any, p Parameters) bool { return data == nil && InSharedMemory(p) }
