package reference_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

var shmSeq int // tests that create objects do not run in parallel

// newSHM creates a shared memory object removed at the end of the test.
func newSHM(t *testing.T, size int) *client.SharedMemory {
	t.Helper()
	shmSeq++
	key := fmt.Sprintf("/oipkit_ref_%d_%d_%s", os.Getpid(), shmSeq, strings.NewReplacer("/", "_").Replace(t.Name()))
	m, err := client.CreateSharedMemory(key, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func putInt32s(b []byte, v []int32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
}

func int32s(b []byte, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// shmAddSub is add_sub with both inputs at offsets 0 and 64 of region "in"
// and OUTPUT0 at offset 64 of region "out".
func shmAddSub() *oip.InferRequest {
	in := func(name string, off int64) oip.InferInput {
		return oip.InferInput{
			Tensor:     tensor.Tensor{Name: name, Datatype: tensor.Int32, Shape: []int64{1, 16}},
			Parameters: oip.SharedMemoryRef{Region: "in", Offset: off, ByteSize: 64}.Params(),
		}
	}
	return &oip.InferRequest{
		Model:   "add_sub",
		Inputs:  []oip.InferInput{in("INPUT0", 0), in("INPUT1", 64)},
		Outputs: []oip.RequestedOutput{{Name: "OUTPUT0", Parameters: oip.SharedMemoryRef{Region: "out", Offset: 64, ByteSize: 64}.Params()}},
	}
}

// Inputs are read from and outputs written to registered regions, over
// REST (JSON and binary) and gRPC (typed and raw); status, unregister and
// unregister-all behave as the extension says.
func TestSystemSharedMemoryInfer(t *testing.T) {
	srv := referencetest.Start(t)
	ctx := context.Background()
	rest, err := client.NewREST(srv.HTTPURL(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	grpcC, err := client.NewGRPC(srv.GRPCAddr(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer grpcC.Close()
	in, out := newSHM(t, 128), newSHM(t, 256)
	a, b := make([]int32, 16), make([]int32, 16)
	for i := range a {
		a[i], b[i] = int32(i), int32(100*i)
	}
	putInt32s(in.Bytes(), a)
	putInt32s(in.Bytes()[64:], b)
	if err := rest.SystemSharedMemoryRegister(ctx, "in", in.Key, 0, 128); err != nil {
		t.Fatal(err)
	}
	if err := grpcC.SystemSharedMemoryRegister(ctx, "out", out.Key, 0, 256); err != nil {
		t.Fatal(err)
	}
	st, err := rest.SystemSharedMemoryStatus(ctx, "")
	if err != nil || len(st) != 2 || st[0] != (oip.SystemSharedMemoryRegion{Name: "in", Key: in.Key, ByteSize: 128}) {
		t.Fatalf("status: %+v, %v", st, err)
	}
	if st, err := grpcC.SystemSharedMemoryStatus(ctx, "out"); err != nil || len(st) != 1 || st[0].Name != "out" || st[0].ByteSize != 256 {
		t.Fatalf("gRPC status of out: %+v, %v", st, err)
	}
	binREST, _ := client.NewREST(srv.HTTPURL(), true, client.Options{})
	rawGRPC, _ := client.NewGRPC(srv.GRPCAddr(), true, client.Options{})
	defer rawGRPC.Close()
	for name, c := range map[string]interface {
		Infer(context.Context, *oip.InferRequest) (*oip.InferResponse, error)
	}{"rest": rest, "rest-binary": binREST, "grpc": grpcC, "grpc-raw": rawGRPC} {
		clear(out.Bytes())
		resp, err := c.Infer(ctx, shmAddSub())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o := resp.Outputs[0]
		if o.Data != nil || o.Parameters[oip.ParamSharedMemoryRegion] != "out" {
			t.Errorf("%s: output %+v: want no data and the region", name, o)
		}
		got := int32s(out.Bytes()[64:], 16)
		for i := range got {
			if got[i] != a[i]+b[i] {
				t.Fatalf("%s: OUTPUT0 in shared memory = %v, want the sums of %v and %v", name, got, a, b)
			}
		}
	}
	if err := rest.SystemSharedMemoryUnregister(ctx, "in"); err != nil {
		t.Fatal(err)
	}
	if _, err := rest.Infer(ctx, shmAddSub()); err == nil || !strings.Contains(err.Error(), `"in" is not registered`) {
		t.Errorf("infer from an unregistered region: %v", err)
	}
	if err := grpcC.SystemSharedMemoryUnregister(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if st, err := rest.SystemSharedMemoryStatus(ctx, ""); err != nil || len(st) != 0 {
		t.Errorf("status after unregister all: %+v, %v", st, err)
	}
}

// Every bad register, status, unregister or inference is a 400 (or
// INVALID_ARGUMENT) with a message, and the server keeps serving.
func TestSystemSharedMemoryErrors(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxSharedMemoryRegions = 2; c.MaxSharedMemoryBytes = 4096 })
	base := srv.HTTPURL()
	m := newSHM(t, 128)
	reg := func(name, body string) httpResult {
		return post(t, base+"/v2/systemsharedmemory/region/"+name+"/register", body)
	}
	for _, c := range []struct{ name, body, want string }{
		{"r", `{"key":"/oipkit_no_such_key","offset":0,"byte_size":64}`, "cannot open"},
		{"r", `{"key":"../../etc/passwd","offset":0,"byte_size":64}`, "not a POSIX shared memory name"},
		{"r", `{"key":"` + m.Key + `","offset":100,"byte_size":64}`, "beyond the 128 bytes"},
		{"r", `{"key":"` + m.Key + `","offset":0,"byte_size":0}`, "must be positive"},
		{"r", `{"key":"` + m.Key + `"}`, "the body must be"},
		{"r", `{"key":"` + m.Key + `","byte_size":8192}`, "limit"},
		{"r", `[`, "request body"},
	} {
		r := reg(c.name, c.body)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), c.want) {
			t.Errorf("register %s: %d %s, want 400 mentioning %q", c.body, r.status, r.body, c.want)
		}
	}
	// A symbolic link in /dev/shm is not followed.
	link := fmt.Sprintf("oipkit_ref_link_%d", os.Getpid())
	if err := os.Symlink("/dev/shm"+m.Key, "/dev/shm/"+link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove("/dev/shm/" + link)
	if r := reg("l", `{"key":"/`+link+`","byte_size":64}`); r.status != http.StatusBadRequest {
		t.Errorf("register a symbolic link: %d %s, want 400", r.status, r.body)
	}
	ok := `{"key":"` + m.Key + `","offset":0,"byte_size":128}`
	for _, n := range []string{"a", "b"} {
		if r := reg(n, ok); r.status != http.StatusOK {
			t.Fatalf("register %s: %d %s", n, r.status, r.body)
		}
	}
	if r := reg("a", ok); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "already registered") {
		t.Errorf("register a twice: %d %s", r.status, r.body)
	}
	if r := reg("c", ok); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "limit") {
		t.Errorf("a third region beyond the limit of 2: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/v2/systemsharedmemory/region/zz/status"} {
		if r := get(t, base+p); r.status != http.StatusBadRequest {
			t.Errorf("GET %s: %d %s", p, r.status, r.body)
		}
	}
	if r := post(t, base+"/v2/systemsharedmemory/region/zz/unregister", ""); r.status != http.StatusBadRequest {
		t.Errorf("unregister an unknown region: %d %s", r.status, r.body)
	}
	// Inference requests naming regions badly.
	infer := func(inputs string) httpResult {
		return post(t, base+inferPath("add_sub", ""), `{"inputs":[`+inputs+`,{"name":"INPUT1","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a","shared_memory_byte_size":64}}]}`)
	}
	for _, c := range []struct{ input, want string }{
		{`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a"}}`, "must be set together"},
		{`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a","shared_memory_byte_size":64},"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}`, "both data and shared_memory_region"},
		{`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"nope","shared_memory_byte_size":64}}`, `is not registered`},
		{`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a","shared_memory_offset":100,"shared_memory_byte_size":64}}`, "outside shared memory region"},
		{`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a","shared_memory_offset":-1,"shared_memory_byte_size":64}}`, "non-negative"},
		{`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a","shared_memory_byte_size":32}}`, "shared_memory_byte_size is 32"},
		{`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a","shared_memory_byte_size":9223372036854775807}}`, "shared_memory_byte_size is 9223372036854775807"},
	} {
		r := infer(c.input)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), c.want) {
			t.Errorf("infer with %s: %d %s, want 400 mentioning %q", c.input, r.status, r.body, c.want)
		}
	}
	// An output region too small for the output.
	r := post(t, base+inferPath("add_sub", ""), `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a","shared_memory_byte_size":64}},{"name":"INPUT1","datatype":"INT32","shape":[1,16],"parameters":{"shared_memory_region":"a","shared_memory_byte_size":64}}],"outputs":[{"name":"OUTPUT0","parameters":{"shared_memory_region":"b","shared_memory_byte_size":16}}]}`)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "do not fit") {
		t.Errorf("output region too small: %d %s", r.status, r.body)
	}
	// CUDA shared memory is not supported, and not advertised.
	if r := get(t, base+"/v2/cudasharedmemory/status"); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "not supported") {
		t.Errorf("CUDA status: %d %s", r.status, r.body)
	}
	if r := get(t, base+"/v2"); strings.Contains(string(r.body), "cuda_shared_memory") || !strings.Contains(string(r.body), "system_shared_memory") {
		t.Errorf("server metadata: %s", r.body)
	}
	c := dial(t, srv.GRPCAddr())
	_, err := c.CudaSharedMemoryRegister(ctxT(t), &inferencepb.CudaSharedMemoryRegisterRequest{Name: "g", RawHandle: []byte{1}, ByteSize: 8})
	wantCode(t, err, codes.InvalidArgument)
	_, err = c.SystemSharedMemoryRegister(ctxT(t), &inferencepb.SystemSharedMemoryRegisterRequest{Name: "x", Key: "/etc/passwd", ByteSize: 8})
	wantCode(t, err, codes.InvalidArgument)
	// gRPC: contents beside a region are refused.
	pb := &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{
		Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 16},
		Parameters: map[string]*inferencepb.InferParameter{
			"shared_memory_region":    {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: "a"}},
			"shared_memory_byte_size": {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 64}},
		},
		Contents: &inferencepb.InferTensorContents{IntContents: make([]int32, 16)},
	}}}
	_, err = c.ModelInfer(ctxT(t), pb)
	wantCode(t, err, codes.InvalidArgument)
}

// Unregistering regions while requests use them fails those requests
// cleanly (or lets them finish); the server neither crashes nor reads
// unmapped memory (run with -race).
func TestSystemSharedMemoryUnregisterWhileInUse(t *testing.T) {
	srv := referencetest.Start(t)
	ctx := context.Background()
	rest, err := client.NewREST(srv.HTTPURL(), true, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, out := newSHM(t, 128), newSHM(t, 128)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range 50 {
				if _, err := rest.Infer(ctx, shmAddSub()); err != nil && !strings.Contains(err.Error(), "not registered") {
					t.Errorf("worker %d: %v", w, err)
					return
				}
			}
		})
	}
	for range 50 {
		rest.SystemSharedMemoryRegister(ctx, "in", in.Key, 0, 128)
		rest.SystemSharedMemoryRegister(ctx, "out", out.Key, 0, 128)
		rest.SystemSharedMemoryUnregister(ctx, "")
	}
	wg.Wait()
	if _, err := rest.ServerLive(ctx); err != nil {
		t.Fatal(err)
	}
}
