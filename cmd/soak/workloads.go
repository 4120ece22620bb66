package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// clients are the soak's long-lived clients, one per transport.
type clients struct {
	srv                                         *server
	rest, restBinary                            *client.REST
	grpc, grpcRaw                               *client.GRPC
	shmPrefix                                   string
	shmSeq, seqID, genSeq, repoSeq, reconnectID atomic.Uint64
}

func newClients(srv *server) (*clients, error) {
	c := &clients{srv: srv, shmPrefix: fmt.Sprintf("oipkit_soak_%d", os.Getpid())}
	var err error
	opts := client.Options{Timeout: 10 * time.Second, Connections: 4}
	if c.rest, err = client.NewREST(srv.httpURL, false, opts); err != nil {
		return nil, err
	}
	if c.restBinary, err = client.NewREST(srv.httpURL, true, opts); err != nil {
		return nil, err
	}
	if c.grpc, err = client.NewGRPC(srv.grpcAddr, false, opts); err != nil {
		return nil, err
	}
	if c.grpcRaw, err = client.NewGRPC(srv.grpcAddr, true, opts); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *clients) close() {
	c.rest.Close()
	c.restBinary.Close()
	c.grpc.Close()
	c.grpcRaw.Close()
}

// A workload is one kind of traffic, one step every `every`, one step at a
// time (a step that overruns its tick delays the next: the load stays
// bounded however slow the machine).
type workload struct {
	name, what string
	every      time.Duration
	step       func(ctx context.Context, w *workload) error

	requests, expected, errors atomic.Uint64
	mu                         sync.Mutex
	firstErrors                []string
}

// workloadStats is a workload's record.
type workloadStats struct {
	Name     string   `json:"name"`
	What     string   `json:"what"`
	Every    string   `json:"every"`
	Requests uint64   `json:"requests"`
	Expected uint64   `json:"expected_errors"` // errors the workload provokes on purpose
	Errors   uint64   `json:"errors"`
	First    []string `json:"first_errors,omitempty"`
}

// sent counts n requests; expected counts those of them answered with the
// error the workload asked for.
func (w *workload) sent(n int)     { w.requests.Add(uint64(n)) }
func (w *workload) provoked(n int) { w.expected.Add(uint64(n)) }

// run steps until load is done. Steps run under ctx, not load: the end of
// the run must not fail the requests under way (a gRPC server times a
// request out by the deadline it was sent, before the client's context
// says so).
func (w *workload) run(ctx, load context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-load.Done():
			return
		case <-t.C:
		}
		if err := w.step(ctx, w); err != nil && ctx.Err() == nil {
			w.errors.Add(1)
			w.mu.Lock()
			if len(w.firstErrors) < 5 {
				w.firstErrors = append(w.firstErrors, fmt.Sprintf("%s: %v", time.Now().UTC().Format(time.TimeOnly), err))
			}
			w.mu.Unlock()
		}
	}
}

func (w *workload) stats() workloadStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return workloadStats{Name: w.name, What: w.what, Every: w.every.String(), Requests: w.requests.Load(),
		Expected: w.expected.Load(), Errors: w.errors.Load(), First: slices.Clone(w.firstErrors)}
}

// workloads are the soak's traffic, about 300 requests/s together.
func workloads(c *clients) []*workload {
	// A workload's request count varies its inputs and picks its model.
	next := func(w *workload) int32 { return int32(w.requests.Load()) }
	return []*workload{
		{name: "rest-json", what: "REST JSON infer of add_sub", every: 20 * time.Millisecond,
			step: func(ctx context.Context, w *workload) error { return inferChecked(ctx, w, c.rest, addSub(next(w))) }},
		{name: "rest-binary", what: "REST binary infer of add_sub and identity_fp32", every: 20 * time.Millisecond,
			step: func(ctx context.Context, w *workload) error {
				return inferChecked(ctx, w, c.restBinary, either(next(w), tensor.FP32))
			}},
		{name: "grpc", what: "gRPC infer (typed contents) of add_sub and identity_bytes", every: 20 * time.Millisecond,
			step: func(ctx context.Context, w *workload) error {
				return inferChecked(ctx, w, c.grpc, either(next(w), tensor.Bytes))
			}},
		{name: "grpc-raw", what: "gRPC infer (raw contents) of add_sub and identity_int64", every: 20 * time.Millisecond,
			step: func(ctx context.Context, w *workload) error {
				return inferChecked(ctx, w, c.grpcRaw, either(next(w), tensor.Int64))
			}},
		{name: "stream", what: "gRPC ModelStreamInfer: one stream per step, tokens (4) and stream_count (8) requests", every: 250 * time.Millisecond,
			step: c.stream},
		{name: "sequence", what: "accumulate sequences of 4 requests, REST and gRPC, uint64 and string ids", every: 100 * time.Millisecond,
			step: c.sequence},
		{name: "generate", what: "REST generate and generate_stream of text_gen", every: 100 * time.Millisecond,
			step: c.generate},
		{name: "repository", what: "unload repo_target, infer it (NOT_FOUND expected), load it, infer it; REST and gRPC", every: time.Second,
			step: c.repository},
		{name: "shared-memory", what: "create /dev/shm objects, register, infer add_sub through them, unregister, remove; REST and gRPC", every: 500 * time.Millisecond,
			step: c.sharedMemory},
		{name: "reconnect", what: "a new client and connection per step: readiness and one add_sub, then close; REST and gRPC", every: time.Second,
			step: c.reconnect},
	}
}

// either is add_sub for an even k, identity_<d> for an odd one.
func either(k int32, d tensor.Datatype) *oip.InferRequest {
	if k%2 == 0 {
		return addSub(k)
	}
	return identity(d, k)
}

// addSub is an add_sub request whose inputs vary with k.
func addSub(k int32) *oip.InferRequest {
	a, b := make([]int32, 16), make([]int32, 16)
	for i := range a {
		a[i], b[i] = k+int32(i), k*int32(i)
	}
	return &oip.InferRequest{Model: "add_sub", Inputs: []oip.InferInput{
		{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1, 16}, Data: a}},
		{Tensor: tensor.Tensor{Name: "INPUT1", Datatype: tensor.Int32, Shape: []int64{1, 16}, Data: b}},
	}}
}

// identity is an identity_<d> request of 2×8 elements that vary with k.
func identity(d tensor.Datatype, k int32) *oip.InferRequest {
	var data any
	switch d {
	case tensor.FP32:
		x := make([]float32, 16)
		for i := range x {
			x[i] = float32(k) + float32(i)/4
		}
		data = x
	case tensor.Int64:
		x := make([]int64, 16)
		for i := range x {
			x[i] = int64(k) << 20 * int64(i)
		}
		data = x
	case tensor.Bytes:
		x := make([][]byte, 16)
		for i := range x {
			x[i] = []byte(strings.Repeat("b", i) + strconv.Itoa(int(k)))
		}
		data = x
	}
	return &oip.InferRequest{Model: "identity_" + d.Lower(), Inputs: []oip.InferInput{
		{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: d, Shape: []int64{2, 8}, Data: data}}}}
}

// expected is the fixture oracle's answer to req.
func expected(req *oip.InferRequest) ([]tensor.Tensor, error) {
	m, err := fixture.Lookup(req.Model, "1")
	if err != nil {
		return nil, err
	}
	in := map[string]tensor.Tensor{}
	for _, t := range req.Inputs {
		in[t.Name] = t.Tensor
	}
	return fixture.Outputs(m, in, req.Parameters)
}

// check compares a response's outputs with the oracle's, bit for bit
// through the raw encoding.
func check(want []tensor.Tensor, r *oip.InferResponse) error {
	for _, w := range want {
		got, ok := r.Output(w.Name)
		if !ok {
			return fmt.Errorf("%s: output %s missing", r.Model, w.Name)
		}
		gb, gerr := tensor.EncodeRaw(got.Tensor)
		wb, werr := tensor.EncodeRaw(w)
		if got.Datatype != w.Datatype || !slices.Equal(got.Shape, w.Shape) || gerr != nil || werr != nil || !bytes.Equal(gb, wb) {
			return fmt.Errorf("%s: output %s is %s %v, want %s %v with the oracle's elements", r.Model, w.Name, got.Datatype, got.Shape, w.Datatype, w.Shape)
		}
	}
	return nil
}

func inferChecked(ctx context.Context, w *workload, c client.Client, req *oip.InferRequest) error {
	want, err := expected(req)
	if err != nil {
		return err
	}
	w.sent(1)
	r, err := c.Infer(ctx, req)
	if err != nil {
		return err
	}
	return check(want, r)
}

// stream opens one ModelStreamInfer stream, sends a tokens request and a
// stream_count request, reads every response and ends the stream.
func (c *clients) stream(ctx context.Context, w *workload) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.grpc.Stream(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	count := func(model, id string, n int32, p oip.Parameters) *oip.InferRequest {
		return &oip.InferRequest{Model: model, ID: id, Parameters: p, Inputs: []oip.InferInput{
			{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{n}}}}}
	}
	want := map[string]int32{"t": 4, "c": 8}
	for _, req := range []*oip.InferRequest{
		count("tokens", "t", want["t"], oip.Parameters{fixture.ParamIntervalMS: int64(2)}),
		count("stream_count", "c", want["c"], nil),
	} {
		w.sent(1)
		if err := st.Send(req); err != nil {
			return err
		}
	}
	if err := st.CloseSend(); err != nil {
		return err
	}
	got := map[string]int32{}
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if m.Err != nil {
			return m.Err
		}
		got[m.ID]++
		k := got[m.ID]
		var wantOut []tensor.Tensor
		switch m.ID {
		case "t":
			wantOut = fixture.TokenOutputs(k)
		case "c":
			wantOut = []tensor.Tensor{fixture.StreamCountOutput(k)}
		default:
			return fmt.Errorf("stream: a response to request %q, which was not sent", m.ID)
		}
		if err := check(wantOut, m.Response); err != nil {
			return fmt.Errorf("stream: response %d of %q: %w", k, m.ID, err)
		}
		if final := k == want[m.ID]; m.FinalKnown && m.Final != final {
			return fmt.Errorf("stream: response %d of %d of %q has triton_final_response %v", k, want[m.ID], m.ID, m.Final)
		}
	}
	if got["t"] != want["t"] || got["c"] != want["c"] {
		return fmt.Errorf("stream: %d tokens and %d stream_count responses, want %d and %d", got["t"], got["c"], want["t"], want["c"])
	}
	return nil
}

// sequence sends one accumulate sequence of 4 requests: over REST or gRPC
// and with a uint64 or a string id, in turn.
func (c *clients) sequence(ctx context.Context, w *workload) error {
	n := c.seqID.Add(1)
	var cl client.Client = c.rest
	if n%2 == 1 {
		cl = c.grpc
	}
	var id any = 1_000_000 + n // the reference's ids are uint64 or string
	if n/2%2 == 1 {
		id = "soak-" + strconv.FormatUint(n, 10)
	}
	var sum int32
	for i := range 4 {
		x := int32(n%97) + int32(i)
		req := &oip.InferRequest{Model: "accumulate", Parameters: oip.Parameters{
			oip.ParamSequenceID: id, oip.ParamSequenceStart: i == 0, oip.ParamSequenceEnd: i == 3}, Inputs: []oip.InferInput{
			{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{x}}}}}
		want, next, err := fixture.AccumulateOutput(sum, req.Inputs[0].Tensor)
		if err != nil {
			return err
		}
		sum = next
		w.sent(1)
		r, err := cl.Infer(ctx, req)
		if err != nil {
			return fmt.Errorf("sequence %v step %d: %w", id, i, err)
		}
		if err := check([]tensor.Tensor{want}, r); err != nil {
			return fmt.Errorf("sequence %v step %d: %w", id, i, err)
		}
	}
	return nil
}

// generate sends a generate or a generate_stream request of text_gen.
func (c *clients) generate(ctx context.Context, w *workload) error {
	n := c.genSeq.Add(1)
	text := "soak test number " + strconv.FormatUint(n, 10) + " of the generate extension"
	want := fixture.TextGenTokens(text, fixture.DefaultMaxTokens)
	req := client.GenerateRequest{Model: "text_gen", TextInput: text}
	w.sent(1)
	if n%2 == 0 {
		r, err := c.rest.Generate(ctx, req)
		if err != nil {
			return err
		}
		if r.TextOutput != strings.Join(want, "") {
			return fmt.Errorf("generate: text_output %q, want %q", r.TextOutput, strings.Join(want, ""))
		}
		return nil
	}
	st, err := c.rest.GenerateStream(ctx, req)
	if err != nil {
		return err
	}
	defer st.Close()
	var got []string
	for {
		r, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		got = append(got, r.TextOutput)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("generate_stream: events %q, want %q", got, want)
	}
	return nil
}

// repository unloads repo_target, checks that an inference of it is not
// found, loads it again and checks that one succeeds; over REST or gRPC
// in turn.
func (c *clients) repository(ctx context.Context, w *workload) error {
	type repo interface {
		client.Client
		LoadModel(ctx context.Context, model, config string) error
		UnloadModel(ctx context.Context, model string, unloadDependents bool) error
	}
	var cl repo = c.rest
	if c.repoSeq.Add(1)%2 == 1 {
		cl = c.grpc
	}
	req := identityInt32("repo_target", 7)
	w.sent(1)
	if err := cl.UnloadModel(ctx, "repo_target", false); err != nil {
		return err
	}
	w.sent(1)
	_, err := cl.Infer(ctx, req)
	var ce *client.Error
	if !errors.As(err, &ce) || (ce.HTTPStatus != http.StatusNotFound && ce.GRPCCode != codes.NotFound) {
		return fmt.Errorf("infer repo_target while unloaded: %v, want not found", err)
	}
	w.provoked(1)
	w.sent(1)
	if err := cl.LoadModel(ctx, "repo_target", ""); err != nil {
		return err
	}
	return inferChecked(ctx, w, cl, req)
}

func identityInt32(model string, k int32) *oip.InferRequest {
	return &oip.InferRequest{Model: model, Inputs: []oip.InferInput{
		{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1, 4}, Data: []int32{k, k + 1, k + 2, k + 3}}}}}
}

// sharedMemory creates an input and an output object, registers them,
// infers add_sub through them, reads the outputs, unregisters both regions
// and removes the objects; over REST or gRPC in turn.
func (c *clients) sharedMemory(ctx context.Context, w *workload) error {
	type shm interface {
		client.Client
		SystemSharedMemoryRegister(ctx context.Context, region, key string, offset, byteSize uint64) error
		SystemSharedMemoryUnregister(ctx context.Context, region string) error
	}
	n := c.shmSeq.Add(1)
	var cl shm = c.rest
	if n%2 == 1 {
		cl = c.grpc
	}
	req := addSub(int32(n))
	want, err := expected(req)
	if err != nil {
		return err
	}
	const size = 2 * 16 * 4 // two INT32 tensors of 16 elements
	var regions []string
	defer func() {
		// Unregister with a deadline of its own: the run may be over.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, r := range regions {
			cl.SystemSharedMemoryUnregister(uctx, r)
		}
	}()
	object := func(suffix string) (*client.SharedMemory, string, error) {
		name := fmt.Sprintf("%s_%d_%s", c.shmPrefix, n, suffix)
		obj, err := client.CreateSharedMemory("/"+name, size)
		if err != nil {
			return nil, "", err
		}
		w.sent(1)
		if err := cl.SystemSharedMemoryRegister(ctx, name, obj.Key, 0, size); err != nil {
			obj.Close()
			return nil, "", err
		}
		regions = append(regions, name)
		return obj, name, nil
	}
	in, inName, err := object("in")
	if err != nil {
		return err
	}
	defer in.Close()
	out, outName, err := object("out")
	if err != nil {
		return err
	}
	defer out.Close()
	for i := range req.Inputs {
		raw, err := tensor.EncodeRaw(req.Inputs[i].Tensor)
		if err != nil {
			return err
		}
		copy(in.Bytes()[i*64:], raw)
		req.Inputs[i].Parameters = oip.SharedMemoryRef{Region: inName, Offset: int64(i * 64), ByteSize: 64}.Params()
		req.Inputs[i].Data = nil
	}
	req.Outputs = []oip.RequestedOutput{
		{Name: "OUTPUT0", Parameters: oip.SharedMemoryRef{Region: outName, ByteSize: 64}.Params()},
		{Name: "OUTPUT1", Parameters: oip.SharedMemoryRef{Region: outName, Offset: 64, ByteSize: 64}.Params()},
	}
	w.sent(1)
	if _, err := cl.Infer(ctx, req); err != nil {
		return err
	}
	for i, t := range want {
		wb, err := tensor.EncodeRaw(t)
		if err != nil {
			return err
		}
		if !bytes.Equal(out.Bytes()[i*64:(i+1)*64], wb) {
			return fmt.Errorf("shared memory: %s in region %s differs from the oracle's", t.Name, outName)
		}
	}
	for _, r := range regions {
		w.sent(1)
		if err := cl.SystemSharedMemoryUnregister(ctx, r); err != nil {
			return err
		}
	}
	regions = nil
	return nil
}

// reconnect opens a new client (a new connection), asks for readiness and
// infers add_sub once, and closes it; REST and gRPC in turn.
func (c *clients) reconnect(ctx context.Context, w *workload) error {
	n := c.reconnectID.Add(1)
	var cl client.Client
	var err error
	opts := client.Options{Timeout: 10 * time.Second, Connections: 1}
	if n%2 == 0 {
		cl, err = client.NewREST(c.srv.httpURL, false, opts)
	} else {
		cl, err = client.NewGRPC(c.srv.grpcAddr, false, opts)
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	w.sent(1)
	if ok, err := cl.ServerReady(ctx); err != nil || !ok {
		return fmt.Errorf("a new connection: server ready %v, %v", ok, err)
	}
	return inferChecked(ctx, w, cl, addSub(int32(n)))
}
