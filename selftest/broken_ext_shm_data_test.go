package selftest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers whose shared memory data path is broken in one way each: the
// offsets, the region's bounds, BYTES written to a region, and a register
// of an unknown key.

func init() { breakages = append(breakages, shmDataBreakages...) }

// shmRegions remembers the regions registered over REST, so that a broken
// server can clamp a read into them or rewrite what was written there.
type shmRegions struct {
	mu     sync.Mutex
	byName map[string]shmRegion
	// pending are the BYTES outputs requested in a region, by the
	// shmPendingHeader the request was marked with (the proxy's answer
	// carries its outgoing clone of the request, not the request).
	pending map[string][]shmPlace
	seq     int
}

type shmRegion struct {
	key          string
	offset, size int64
}

// shmPlace is a byte offset in an object.
type shmPlace struct {
	key    string
	offset int64
}

const shmPendingHeader = "X-Selftest-Shm-Output"

func newSHMRegions() *shmRegions {
	return &shmRegions{byName: map[string]shmRegion{}, pending: map[string][]shmPlace{}}
}

// track records a REST register request.
func (s *shmRegions) track(r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/v2/systemsharedmemory/region/")
	if !ok || r.Method != http.MethodPost {
		return
	}
	name, ok = strings.CutSuffix(name, "/register")
	if !ok {
		return
	}
	var b struct {
		Key      string `json:"key"`
		Offset   int64  `json:"offset"`
		ByteSize int64  `json:"byte_size"`
	}
	if json.Unmarshal(requestBody(r), &b) != nil {
		return
	}
	s.mu.Lock()
	s.byName[name] = shmRegion{b.Key, b.Offset, b.ByteSize}
	s.mu.Unlock()
}

func (s *shmRegions) get(name string) (shmRegion, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byName[name]
	return r, ok
}

// shmParam reads an integer parameter of a tensor (0 when absent).
func shmParam(t map[string]any, key string) int64 {
	p, _ := t["parameters"].(map[string]any)
	n, _ := p[key].(json.Number)
	v, _ := n.Int64()
	return v
}

func shmRegionOf(t map[string]any) string {
	p, _ := t["parameters"].(map[string]any)
	s, _ := p["shared_memory_region"].(string)
	return s
}

// dropSHMOffset deletes shared_memory_offset from the tensors of list key.
func dropSHMOffset(key string) *restHook {
	return &restHook{in: func(r *http.Request) {
		editInferRequest(r, func(m map[string]any) {
			for _, t := range tensorsOf(m, key) {
				if p, ok := t["parameters"].(map[string]any); ok {
					delete(p, "shared_memory_offset")
				}
			}
		})
	}}
}

// clampSHMReads: an input reaching past its region's end is read from the
// last bytes of the region instead of being refused.
func clampSHMReads() *restHook {
	s := newSHMRegions()
	return &restHook{in: func(r *http.Request) {
		s.track(r)
		editInferRequest(r, func(m map[string]any) {
			for _, t := range tensorsOf(m, "inputs") {
				reg, ok := s.get(shmRegionOf(t))
				off, size := shmParam(t, "shared_memory_offset"), shmParam(t, "shared_memory_byte_size")
				if ok && off+size > reg.size && size <= reg.size {
					t["parameters"].(map[string]any)["shared_memory_offset"] = reg.size - size
				}
			}
		})
	}}
}

// truncateSHMBytes: a BYTES output written to a region has its first
// element's length one byte short.
func truncateSHMBytes() *restHook {
	s := newSHMRegions()
	return &restHook{
		in: func(r *http.Request) {
			s.track(r)
			if !isInfer(r) {
				return
			}
			var m map[string]any
			d := json.NewDecoder(bytes.NewReader(requestBody(r)))
			d.UseNumber()
			if d.Decode(&m) != nil {
				return
			}
			var places []shmPlace
			for _, o := range tensorsOf(m, "outputs") {
				if reg, ok := s.get(shmRegionOf(o)); ok {
					places = append(places, shmPlace{reg.key, reg.offset + shmParam(o, "shared_memory_offset")})
				}
			}
			if isBytesModel(r) && len(places) > 0 {
				s.mu.Lock()
				s.seq++
				id := strconv.Itoa(s.seq)
				s.pending[id] = places
				s.mu.Unlock()
				r.Header.Set(shmPendingHeader, id)
			}
		},
		out: func(r *http.Request, a *answer) {
			s.mu.Lock()
			id := r.Header.Get(shmPendingHeader)
			places := s.pending[id]
			delete(s.pending, id)
			s.mu.Unlock()
			if a.status != http.StatusOK {
				return
			}
			for _, p := range places {
				f, err := os.OpenFile("/dev/shm/"+strings.TrimPrefix(p.key, "/"), os.O_RDWR, 0)
				if err != nil {
					continue
				}
				var n [4]byte
				if _, err := f.ReadAt(n[:], p.offset); err == nil {
					if l := binary.LittleEndian.Uint32(n[:]); l > 0 {
						binary.LittleEndian.PutUint32(n[:], l-1)
						f.WriteAt(n[:], p.offset)
					}
				}
				f.Close()
			}
		},
	}
}

// isBytesModel: the request is to identity_bytes, whose output is BYTES.
func isBytesModel(r *http.Request) bool { return strings.Contains(r.URL.Path, "/identity_bytes/") }

var shmDataBreakages = []breakage{
	{
		// Reading every input from its region's start also reads the
		// ones placed past the region's end from inside it: that server
		// breaks OIP-EXT-SHM-015 too.
		name:   "rest-shm-input-offset-ignored",
		rest:   dropSHMOffset("inputs"),
		failed: []string{"OIP-EXT-SHM-002", "OIP-EXT-SHM-015"},
	},
	{
		name:   "rest-shm-reads-past-region-end",
		rest:   clampSHMReads(),
		failed: []string{"OIP-EXT-SHM-015"},
	},
	{
		name:   "rest-shm-bytes-output-truncated",
		rest:   truncateSHMBytes(),
		failed: []string{"OIP-EXT-SHM-004"},
	},
	{
		name:   "rest-shm-output-offset-ignored",
		rest:   dropSHMOffset("outputs"),
		failed: []string{"OIP-EXT-SHM-004"},
	},
	{
		name: "grpc-shm-register-unknown-key-internal",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if r, ok := req.(*pb.SystemSharedMemoryRegisterRequest); ok && err != nil {
				if _, statErr := os.Stat("/dev/shm/" + strings.TrimPrefix(r.GetKey(), "/")); statErr != nil {
					return nil, status.Error(codes.Internal, "shm_open failed")
				}
			}
			return resp, err
		},
		failed: []string{"OIP-EXT-SHM-013"},
	},
}
