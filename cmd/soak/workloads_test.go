package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/tensor"
)

// Every workload's step, run twice (each alternates transports or
// routes) while the others run theirs, as in a soak, succeeds against the
// reference server and counts its requests; the repository step counts the
// NOT_FOUND it provokes.
func TestWorkloadsAgainstReference(t *testing.T) {
	ref := referencetest.Start(t)
	cl, err := newClients(&server{httpURL: ref.HTTPURL(), grpcAddr: ref.GRPCAddr()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := workloads(cl)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for i := range 2 {
				if err := w.step(ctx, w); err != nil {
					t.Errorf("%s step %d: %v", w.name, i, err)
				}
			}
		})
	}
	wg.Wait()
	for _, w := range ws {
		if w.requests.Load() < 2 {
			t.Errorf("%s: %d requests counted after two steps", w.name, w.requests.Load())
		}
		if want := uint64(0); w.name == "repository" {
			if w.expected.Load() != 2 {
				t.Errorf("repository: %d expected errors after two steps, want 2", w.expected.Load())
			}
		} else if w.expected.Load() != want {
			t.Errorf("%s: %d expected errors", w.name, w.expected.Load())
		}
	}
	// The soak's sampler reads the Go families of this server's /metrics.
	r, err := cl.rest.Do(ctx, "GET", "/metrics", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_heap_objects"}
	values, err := gauges(r.Body, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if v, ok := values[name]; !ok || v <= 0 {
			t.Errorf("%s = %v (found %v)", name, v, ok)
		}
	}
}

// check refuses an answer that differs from the oracle's in an element, a
// shape or a datatype, and a missing output.
func TestCheck(t *testing.T) {
	req := addSub(3)
	want, err := expected(req)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(edit func(o []oip.InferOutput)) *oip.InferResponse {
		r := &oip.InferResponse{Model: "add_sub"}
		for _, w := range want {
			d := append([]int32(nil), w.Data.([]int32)...)
			r.Outputs = append(r.Outputs, oip.InferOutput{Tensor: tensor.Tensor{Name: w.Name, Datatype: w.Datatype, Shape: w.Shape, Data: d}})
		}
		if edit != nil {
			edit(r.Outputs)
		}
		return r
	}
	if err := check(want, answer(nil)); err != nil {
		t.Fatalf("the oracle's own answer: %v", err)
	}
	for name, edit := range map[string]func(o []oip.InferOutput){
		"element":  func(o []oip.InferOutput) { o[1].Data.([]int32)[5]++ },
		"shape":    func(o []oip.InferOutput) { o[0].Shape = []int64{16} },
		"datatype": func(o []oip.InferOutput) { o[0].Datatype = tensor.Uint32 },
		"missing":  func(o []oip.InferOutput) { o[1].Name = "OUTPUT9" },
	} {
		if err := check(want, answer(edit)); err == nil || !strings.Contains(err.Error(), "add_sub") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
