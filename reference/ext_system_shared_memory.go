package reference

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// The system shared memory extension (Triton's): clients create POSIX
// shared memory objects (/dev/shm/<key>), register a byte range of one under
// a region name, and then name the region in an input's or output's
// parameters (shared_memory_region, shared_memory_offset,
// shared_memory_byte_size) instead of sending the data. REST:
// GET /v2/systemsharedmemory[/region/{r}]/status,
// POST /v2/systemsharedmemory/region/{r}/register ({key, offset, byte_size}),
// POST /v2/systemsharedmemory[/region/{r}]/unregister; gRPC:
// SystemSharedMemoryStatus/Register/Unregister (an empty name means every
// region).
//
// Safety: a key names an object directly under /dev/shm (no path), so a
// client cannot map other files. Every access is bounds-checked against the
// registered range. A region is reference-counted while a request copies
// from or to it: unregistering removes the name at once, and the mapping is
// released when its last user finishes, so a concurrent request either
// completes its copy or fails with "not registered", never touching
// unmapped memory. A client that truncates the object under a mapping makes
// the copy fault; that fault is recovered into an error. Regions and their
// total size are bounded by Config.MaxSharedMemoryRegions and
// MaxSharedMemoryBytes.
//
// CUDA shared memory is not supported (no GPU): it is not advertised, and
// its routes and RPCs answer a clear error.

var extSystemSharedMemory = extension{
	name:       specs.ExtSystemSharedMemory,
	advertised: true,
	rest: []extRoute{
		// {m} is the region name here.
		{method: http.MethodGet, path: "/v2/systemsharedmemory/status", serve: (*Server).serveSHMStatus},
		{method: http.MethodGet, path: "/v2/systemsharedmemory/region/{m}/status", serve: (*Server).serveSHMStatus},
		{method: http.MethodPost, path: "/v2/systemsharedmemory/region/{m}/register", serve: (*Server).serveSHMRegister},
		{method: http.MethodPost, path: "/v2/systemsharedmemory/region/{m}/unregister", serve: (*Server).serveSHMUnregister},
		{method: http.MethodPost, path: "/v2/systemsharedmemory/unregister", serve: (*Server).serveSHMUnregister},
	},
	grpc: []string{"SystemSharedMemoryStatus", "SystemSharedMemoryRegister", "SystemSharedMemoryUnregister"},
}

// extCUDASharedMemory answers every CUDA shared memory call with an error
// saying it is not supported; it is not advertised.
var extCUDASharedMemory = extension{
	name: specs.ExtCUDASharedMemory,
	rest: []extRoute{
		{method: http.MethodGet, path: "/v2/cudasharedmemory/status", serve: (*Server).serveCUDANotSupported},
		{method: http.MethodGet, path: "/v2/cudasharedmemory/region/{m}/status", serve: (*Server).serveCUDANotSupported},
		{method: http.MethodPost, path: "/v2/cudasharedmemory/region/{m}/register", serve: (*Server).serveCUDANotSupported},
		{method: http.MethodPost, path: "/v2/cudasharedmemory/region/{m}/unregister", serve: (*Server).serveCUDANotSupported},
		{method: http.MethodPost, path: "/v2/cudasharedmemory/unregister", serve: (*Server).serveCUDANotSupported},
	},
	grpc: []string{"CudaSharedMemoryStatus", "CudaSharedMemoryRegister", "CudaSharedMemoryUnregister"},
}

// errCUDANotSupported answers the CUDA shared memory calls.
var errCUDANotSupported = invalidf("CUDA shared memory is not supported: this server has no GPU (it does not advertise %s); use system shared memory", specs.ExtCUDASharedMemory)

// shmDir is where POSIX shared memory objects live on Linux.
const shmDir = "/dev/shm"

// shmRegion is one registered region: data is the registered byte range of
// the mapping.
type shmRegion struct {
	status  oip.SystemSharedMemoryRegion
	mapping []byte // the whole mapping (page-aligned start), for munmap
	data    []byte
	refs    int  // requests copying from or to it; under shmRegions.mu
	removed bool // unregistered: unmap when refs drops to 0
}

// shmRegions is the registry of regions.
type shmRegions struct {
	maxRegions int
	maxBytes   int64

	mu     sync.Mutex
	byName map[string]*shmRegion
	bytes  int64 // registered bytes
}

func newSHMRegions(maxRegions int, maxBytes int64) *shmRegions {
	return &shmRegions{maxRegions: maxRegions, maxBytes: maxBytes, byName: make(map[string]*shmRegion)}
}

// shmPath is the file of a POSIX shared memory key ("/name" or "name").
func shmPath(key string) (string, error) {
	name := strings.TrimPrefix(key, "/")
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return "", invalidf("shared memory key %q is not a POSIX shared memory name (one path segment, as given to shm_open)", key)
	}
	return shmDir + "/" + name, nil
}

// register maps [offset, offset+size) of the object key as region name.
func (rs *shmRegions) register(name, key string, offset, size uint64) error {
	if name == "" {
		return invalidf("register system shared memory: the region name is empty")
	}
	if size == 0 {
		return invalidf("register system shared memory region %q: byte_size must be positive", name)
	}
	path, err := shmPath(key)
	if err != nil {
		return fmt.Errorf("register system shared memory region %q: %w", name, err)
	}
	// Check the names and limits before mapping anything.
	rs.mu.Lock()
	if _, dup := rs.byName[name]; dup {
		rs.mu.Unlock()
		return invalidf("register system shared memory region %q: a region of that name is already registered (unregister it first)", name)
	}
	if len(rs.byName) >= rs.maxRegions {
		rs.mu.Unlock()
		return invalidf("register system shared memory region %q: %d regions are registered, the server's limit (--max-shm-regions)", name, rs.maxRegions)
	}
	if size > uint64(rs.maxBytes-rs.bytes) {
		rs.mu.Unlock()
		return invalidf("register system shared memory region %q: %d bytes would exceed the server's limit of %d registered bytes (--max-shm-bytes; %d in use)", name, size, rs.maxBytes, rs.bytes)
	}
	rs.mu.Unlock()

	// O_NOFOLLOW: a symbolic link planted in /dev/shm must not lead the
	// server to map another file.
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return invalidf("register system shared memory region %q: cannot open key %q: %v", name, key, errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return invalidf("register system shared memory region %q: key %q: %v", name, key, err)
	}
	if !fi.Mode().IsRegular() {
		return invalidf("register system shared memory region %q: key %q is not a shared memory object", name, key)
	}
	if offset > uint64(fi.Size()) || size > uint64(fi.Size())-offset {
		return invalidf("register system shared memory region %q: offset %d + byte_size %d is beyond the %d bytes of key %q", name, offset, size, fi.Size(), key)
	}
	page := uint64(os.Getpagesize())
	start := offset &^ (page - 1)
	mapping, err := syscall.Mmap(int(f.Fd()), int64(start), int(offset-start+size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return invalidf("register system shared memory region %q: cannot map key %q: %v", name, key, err)
	}
	r := &shmRegion{
		status:  oip.SystemSharedMemoryRegion{Name: name, Key: key, Offset: offset, ByteSize: size},
		mapping: mapping,
		data:    mapping[offset-start:],
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	// Checked again: another register may have won meanwhile.
	if _, dup := rs.byName[name]; dup || len(rs.byName) >= rs.maxRegions || size > uint64(rs.maxBytes-rs.bytes) {
		syscall.Munmap(mapping)
		return invalidf("register system shared memory region %q: a concurrent register took the name or the last of the server's limits", name)
	}
	rs.byName[name] = r
	rs.bytes += int64(size)
	return nil
}

// unregister removes region name, or every region when name is "".
func (rs *shmRegions) unregister(name string) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if name != "" {
		r, ok := rs.byName[name]
		if !ok {
			return invalidf("unregister system shared memory region %q: no such region is registered", name)
		}
		rs.removeLocked(r)
		return nil
	}
	for _, r := range rs.byName {
		rs.removeLocked(r)
	}
	return nil
}

func (rs *shmRegions) removeLocked(r *shmRegion) {
	delete(rs.byName, r.status.Name)
	rs.bytes -= int64(r.status.ByteSize)
	r.removed = true
	if r.refs == 0 {
		syscall.Munmap(r.mapping)
		r.mapping, r.data = nil, nil
	}
}

// status lists region name, or every region (by name) when name is "".
func (rs *shmRegions) status(name string) ([]oip.SystemSharedMemoryRegion, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if name != "" {
		r, ok := rs.byName[name]
		if !ok {
			return nil, invalidf("system shared memory region %q is not registered", name)
		}
		return []oip.SystemSharedMemoryRegion{r.status}, nil
	}
	out := make([]oip.SystemSharedMemoryRegion, 0, len(rs.byName))
	for _, r := range rs.byName {
		out = append(out, r.status)
	}
	slices.SortFunc(out, func(a, b oip.SystemSharedMemoryRegion) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// access runs f on the bytes ref names, with the region held so that it
// cannot be unmapped meanwhile. kind and name say which tensor, for errors.
func (rs *shmRegions) access(ref oip.SharedMemoryRef, kind, name string, f func(b []byte)) (err error) {
	rs.mu.Lock()
	r, ok := rs.byName[ref.Region]
	if !ok {
		rs.mu.Unlock()
		return invalidf("%s %q: shared memory region %q is not registered", kind, name, ref.Region)
	}
	size := int64(r.status.ByteSize)
	if ref.Offset > size || ref.ByteSize > size-ref.Offset {
		rs.mu.Unlock()
		return invalidf("%s %q: offset %d + byte size %d is outside shared memory region %q of %d bytes", kind, name, ref.Offset, ref.ByteSize, ref.Region, size)
	}
	r.refs++
	rs.mu.Unlock()
	defer func() {
		rs.mu.Lock()
		r.refs--
		if r.removed && r.refs == 0 && r.mapping != nil {
			syscall.Munmap(r.mapping)
			r.mapping, r.data = nil, nil
		}
		rs.mu.Unlock()
	}()
	// A client that shrinks the object under the mapping makes the copy
	// fault (SIGBUS); report it instead of crashing.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = invalidf("%s %q: shared memory region %q could not be accessed (was its object truncated?): %v", kind, name, ref.Region, p)
		}
	}()
	f(r.data[ref.Offset : ref.Offset+ref.ByteSize])
	return nil
}

// closeAll unmaps every region (at shutdown).
func (rs *shmRegions) closeAll() { rs.unregister("") }

// readSHMInputs fills the inputs of req whose data is in shared memory,
// copying it out of the regions (the model may keep the data after the
// region is gone).
func (s *Server) readSHMInputs(req *oip.InferRequest) error {
	for i := range req.Inputs {
		in := &req.Inputs[i]
		ref, ok, err := oip.SharedMemoryOf(in.Parameters)
		if err != nil {
			return invalidf("input %q: %v", in.Name, err)
		}
		if !ok {
			continue
		}
		if in.Data != nil {
			return invalidf("input %q: both data and %s are set; a tensor in shared memory carries no data", in.Name, oip.ParamSharedMemoryRegion)
		}
		if sz := in.Datatype.Size(); sz > 0 {
			n, err := tensor.ElementCount(in.Shape)
			if err != nil {
				return invalidf("input %q: %v", in.Name, err)
			}
			if n > s.cfg.MaxTensorElements || n*int64(sz) != ref.ByteSize {
				return invalidf("input %q: %s %v is %d elements of %d bytes, but %s is %d", in.Name, in.Datatype, in.Shape, n, sz, oip.ParamSharedMemoryByteSize, ref.ByteSize)
			}
		}
		var t tensor.Tensor
		var decodeErr error
		if err := s.shm.access(ref, "input", in.Name, func(b []byte) {
			t, decodeErr = tensor.DecodeRaw(in.Name, in.Datatype, in.Shape, slices.Clone(b))
		}); err != nil {
			return err
		}
		if decodeErr != nil {
			return invalidf("input %q: shared memory region %q: %v", in.Name, ref.Region, decodeErr)
		}
		in.Tensor = t
	}
	return nil
}

// checkSHMOutputs checks the shared memory parameters of the requested
// outputs before the model runs.
func (s *Server) checkSHMOutputs(req *oip.InferRequest) error {
	for _, o := range req.Outputs {
		ref, ok, err := oip.SharedMemoryOf(o.Parameters)
		if err != nil {
			return invalidf("output %q: %v", o.Name, err)
		}
		if ok {
			if err := s.shm.access(ref, "output", o.Name, func([]byte) {}); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSHMOutputs writes the outputs requested in shared memory into their
// regions; the response keeps their name, datatype and shape, no data, and
// the parameters naming where the data is (byte size: what was written).
func (s *Server) writeSHMOutputs(req *oip.InferRequest, resp *oip.InferResponse) error {
	for _, o := range req.Outputs {
		ref, ok, err := oip.SharedMemoryOf(o.Parameters)
		if err != nil || !ok {
			continue // checked before the model ran
		}
		for i := range resp.Outputs {
			out := &resp.Outputs[i]
			if out.Name != o.Name {
				continue
			}
			size := int64(tensor.RawSize(out.Tensor))
			if size > ref.ByteSize {
				return invalidf("output %q: its %d bytes do not fit the %d bytes (%s) given in shared memory region %q", o.Name, size, ref.ByteSize, oip.ParamSharedMemoryByteSize, ref.Region)
			}
			raw, err := tensor.EncodeRaw(out.Tensor)
			if err != nil {
				return fmt.Errorf("output %q: %w", o.Name, err)
			}
			if err := s.shm.access(ref, "output", o.Name, func(b []byte) { copy(b, raw) }); err != nil {
				return err
			}
			written := ref
			written.ByteSize = size
			out.Tensor.Data = nil
			out.Parameters = written.Params()
		}
	}
	return nil
}

// serveSHMStatus answers GET /v2/systemsharedmemory[/region/{r}]/status.
func (s *Server) serveSHMStatus(w *statusWriter, _ *http.Request, p routeParams) {
	list, err := s.shm.status(p.model)
	if err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// serveSHMRegister answers POST /v2/systemsharedmemory/region/{r}/register.
func (s *Server) serveSHMRegister(w *statusWriter, r *http.Request, p routeParams) {
	var req struct {
		Key      *string `json:"key"`
		Offset   *uint64 `json:"offset"`
		ByteSize *uint64 `json:"byte_size"`
	}
	err := s.readJSONBody(w, r, &req)
	if err == nil && (req.Key == nil || req.ByteSize == nil) {
		err = invalidf("register system shared memory region %q: the body must be {\"key\": string, \"offset\": integer, \"byte_size\": integer}", p.model)
	}
	if err == nil {
		err = s.shm.register(p.model, *req.Key, deref(req.Offset), *req.ByteSize)
	}
	if err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	writeJSONBytes(w, http.StatusOK, nil)
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// serveSHMUnregister answers POST /v2/systemsharedmemory[/region/{r}]/unregister.
func (s *Server) serveSHMUnregister(w *statusWriter, _ *http.Request, p routeParams) {
	if err := s.shm.unregister(p.model); err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	writeJSONBytes(w, http.StatusOK, nil)
}

func (s *Server) serveCUDANotSupported(w *statusWriter, _ *http.Request, _ routeParams) {
	writeError(w, httpStatus(errCUDANotSupported), errCUDANotSupported.Error())
}

func (g *grpcService) SystemSharedMemoryStatus(_ context.Context, req *inferencepb.SystemSharedMemoryStatusRequest) (*inferencepb.SystemSharedMemoryStatusResponse, error) {
	list, err := g.s.shm.status(req.GetName())
	if err != nil {
		return nil, toStatus(err)
	}
	return oip.SystemSharedMemoryStatusToProto(list), nil
}

func (g *grpcService) SystemSharedMemoryRegister(_ context.Context, req *inferencepb.SystemSharedMemoryRegisterRequest) (*inferencepb.SystemSharedMemoryRegisterResponse, error) {
	if err := g.s.shm.register(req.GetName(), req.GetKey(), req.GetOffset(), req.GetByteSize()); err != nil {
		return nil, toStatus(err)
	}
	return &inferencepb.SystemSharedMemoryRegisterResponse{}, nil
}

func (g *grpcService) SystemSharedMemoryUnregister(_ context.Context, req *inferencepb.SystemSharedMemoryUnregisterRequest) (*inferencepb.SystemSharedMemoryUnregisterResponse, error) {
	if err := g.s.shm.unregister(req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	return &inferencepb.SystemSharedMemoryUnregisterResponse{}, nil
}

func (g *grpcService) CudaSharedMemoryStatus(context.Context, *inferencepb.CudaSharedMemoryStatusRequest) (*inferencepb.CudaSharedMemoryStatusResponse, error) {
	return nil, toStatus(errCUDANotSupported)
}

func (g *grpcService) CudaSharedMemoryRegister(context.Context, *inferencepb.CudaSharedMemoryRegisterRequest) (*inferencepb.CudaSharedMemoryRegisterResponse, error) {
	return nil, toStatus(errCUDANotSupported)
}

func (g *grpcService) CudaSharedMemoryUnregister(context.Context, *inferencepb.CudaSharedMemoryUnregisterRequest) (*inferencepb.CudaSharedMemoryUnregisterResponse, error) {
	return nil, toStatus(errCUDANotSupported)
}
