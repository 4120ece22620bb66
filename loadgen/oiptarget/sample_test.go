package oiptarget

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/tensor"
)

// TestSampledChecksOnReference checks every answer (--check-every 1) of the
// reference server over every protocol, for every kind of model and
// request the load generator sends: none may fail. Streams are not sampled
// (each streamed message's protobuf is scanned as it comes, stream.go);
// they run here to show --check-every leaves them working.
func TestSampledChecksOnReference(t *testing.T) {
	srv := referencetest.Start(t)
	every := 1
	type variant struct {
		name  string
		model string
		setup func(*loadgen.Config)
		only  []client.Protocol // nil: every protocol
	}
	both := func(name, model string, setup func(*loadgen.Config)) variant {
		return variant{name: name, model: model, setup: setup}
	}
	grpcOnly := []client.Protocol{client.ProtocolGRPC, client.ProtocolGRPCRaw}
	variants := []variant{
		both("add_sub", "add_sub", nil),
		both("add_sub batch 4", "add_sub", func(c *loadgen.Config) { c.Inputs.Shapes = []string{"INPUT0:4,16", "INPUT1:4,16"} }),
		both("versioned 1", "versioned", func(c *loadgen.Config) { c.Target.ModelVersion = "1" }),
		both("versioned 2", "versioned", func(c *loadgen.Config) { c.Target.ModelVersion = "2" }),
		both("versioned default", "versioned", nil),
		both("delay", "delay", func(c *loadgen.Config) { c.Inputs.Parameters = []string{"delay_ms=1"} }),
		both("shared memory", "add_sub", func(c *loadgen.Config) { c.Inputs.SharedMemory = SharedMemorySystem }),
		both("sequences", "accumulate", func(c *loadgen.Config) {
			c.Inputs.File = tokensInput(t, 2)
			c.Sequence = &loadgen.SequenceConfig{Length: 3}
		}),
		{name: "stream tokens", model: "tokens", only: grpcOnly, setup: func(c *loadgen.Config) {
			c.Streaming = &loadgen.StreamConfig{}
			c.Inputs.File = tokensInput(t, 4)
			c.Inputs.Parameters = []string{"interval_ms=0", "first_token_ms=0"}
		}},
		{name: "stream sequences", model: "accumulate", only: grpcOnly, setup: func(c *loadgen.Config) {
			c.Streaming = &loadgen.StreamConfig{}
			c.Inputs.File = tokensInput(t, 2)
			c.Sequence = &loadgen.SequenceConfig{Length: 3}
		}},
		{name: "generate_stream", model: "text_gen", only: []client.Protocol{client.ProtocolHTTP}, setup: func(c *loadgen.Config) {
			c.Streaming = &loadgen.StreamConfig{TextInput: "a b c"}
		}},
	}
	for _, d := range tensor.Datatypes {
		variants = append(variants, both("identity "+d.Lower(), "identity_"+d.Lower(),
			func(c *loadgen.Config) { c.Inputs.Shapes = []string{"INPUT0:2,3"} }))
	}
	for _, p := range client.Protocols {
		for _, v := range variants {
			if v.only != nil && !slices.Contains(v.only, p) {
				continue
			}
			t.Run(string(p)+"/"+v.name, func(t *testing.T) {
				cfg := loadgen.Config{
					Target: loadgen.TargetConfig{Protocol: p, Model: v.model},
					Inputs: loadgen.InputConfig{CheckEvery: &every},
					Load:   loadgen.LoadConfig{Concurrency: 2, Requests: 24},
				}
				if p.IsGRPC() {
					cfg.Target.GRPC = srv.GRPCAddr()
				} else {
					cfg.Target.HTTP = srv.HTTPURL()
				}
				if v.setup != nil {
					v.setup(&cfg)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				tg, err := NewTarget(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer tg.Close()
				rec := &recording{Target: tg, counts: map[string]int{}, first: map[string]string{}}
				var target loadgen.Target = rec
				if cfg.Streaming != nil || cfg.Sequence != nil {
					target = tg // errors are in the result's samples
				}
				res, err := loadgen.Run(ctx, target, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if res.Counts.OK != 24 || res.Counts.Errors+res.Counts.Timeouts != 0 {
					t.Errorf("%d ok of 24, errors %v %v %v", res.Counts.OK, res.Errors, res.ErrorSamples, rec.first)
				}
			})
		}
	}
}

// TestSampleRule: the first answer and every N-th after it are sampled;
// --validate samples every answer, --check-every 0 none.
func TestSampleRule(t *testing.T) {
	for _, c := range []struct {
		every uint64
		want  []int // the sampled answers among the first 100, from 0
	}{
		{0, nil},
		{1, seq(0, 100, 1)},
		{32, []int{0, 32, 64, 96}},
		{7, seq(0, 100, 7)},
	} {
		tg := &OIPTarget{checkEvery: c.every}
		var got []int
		for i := range 100 {
			if tg.sampled() {
				got = append(got, i)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("every %d: sampled %v, want %v", c.every, got, c.want)
		}
	}
}

func seq(from, to, step int) []int {
	var s []int
	for i := from; i < to; i += step {
		s = append(s, i)
	}
	return s
}

func TestCheckEveryConfig(t *testing.T) {
	cfg := grpcConfig("127.0.0.1:1", "m")
	if err := Normalize(&cfg); err != nil || *cfg.Inputs.CheckEvery != DefaultCheckEvery {
		t.Errorf("default: %v, %v", cfg.Inputs.CheckEvery, err)
	}
	neg := -1
	cfg.Inputs.CheckEvery = &neg
	if err := Normalize(&cfg); err == nil || !strings.Contains(err.Error(), "Inputs.CheckEvery") {
		t.Errorf("--check-every -1: %v, want a configuration error", err)
	}
}

// TestCheckAnswer covers the metadata checks one by one.
func TestCheckAnswer(t *testing.T) {
	md := []oip.TensorMetadata{
		{Name: "A", Datatype: tensor.Int32, Shape: []int64{-1, 16}},
		{Name: "B", Datatype: tensor.FP32, Shape: []int64{-1}},
	}
	out := func(name string, d tensor.Datatype, shape ...int64) oip.InferOutput {
		return oip.InferOutput{Tensor: tensor.Tensor{Name: name, Datatype: d, Shape: shape}}
	}
	good := []oip.InferOutput{out("A", tensor.Int32, 2, 16), out("B", tensor.FP32, 7)}
	for _, c := range []struct {
		name    string
		meta    []oip.TensorMetadata
		outputs []oip.InferOutput
		want    string // "" for no error
	}{
		{"good", md, good, ""},
		{"good in another order", md, []oip.InferOutput{good[1], good[0]}, ""},
		{"no metadata outputs", nil, nil, ""},
		{"missing", md, good[:1], `output "B" missing`},
		{"unknown", md, append(good, out("C", tensor.Int32, 1)), `output "C" is not one of the model's outputs (A, B)`},
		{"datatype", md, []oip.InferOutput{out("A", tensor.Int64, 2, 16), good[1]}, `output "A": datatype INT64, the model's metadata says INT32`},
		{"dimension", md, []oip.InferOutput{out("A", tensor.Int32, 2, 15), good[1]}, `output "A": shape [2 15] does not fit the model's [-1 16]`},
		{"rank", md, []oip.InferOutput{out("A", tensor.Int32, 32), good[1]}, `output "A": shape [32] does not fit`},
		{"long shape", md, []oip.InferOutput{out("A", tensor.Int32, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), good[1]}, `shape [1 2 3 4 5 6 7 8] (10 dimensions)`},
	} {
		err := checkAnswer(c.meta, &oip.InferResponse{Outputs: c.outputs})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestSampleKeep: the keep limit grows with the metadata's outputs and the
// request, and a hostile metadata shape cannot overflow it.
func TestSampleKeep(t *testing.T) {
	addSub := fixture.NewAddSub().Metadata().Outputs
	if got, want := sampleKeep(addSub, 100), int64(16*(100+2*32*16)+1<<20); got != want {
		t.Errorf("add_sub: %d, want %d", got, want)
	}
	huge := []oip.TensorMetadata{{Name: "A", Shape: []int64{1 << 62, 1 << 62, -1}}, {Name: "B", Shape: []int64{math.MaxInt64}}}
	if got := sampleKeep(huge, math.MaxInt32); got <= 1<<40 || got > 17<<40 {
		t.Errorf("huge shapes: %d, want 16 TiB and a bit", got)
	}
}

// BenchmarkSampledCheck measures, for every protocol:
//
//   - check-every=0, =32 (the default), =1: OIPTarget.Do's CPU per request
//     with sampling off, at the default rule and on every answer. The
//     reference server runs in a subprocess, so cpu-ns/op (this process's
//     user and system time over the requests) is the generator's own CPU;
//     on a shared machine it moves by ±20% from run to run, more than the
//     default rule costs;
//   - sample: what a sampled answer adds, alone and in process — the kept
//     body's copy, its decoding and the metadata check — so that the
//     default rule's share of a request's CPU is the sample's cpu-ns/op / 32
//     over check-every=0's.
func BenchmarkSampledCheck(b *testing.B) {
	httpURL, grpcAddr := referenceSubprocess(b)
	ctx := context.Background()
	for _, p := range client.Protocols {
		b.Run(string(p)+"/sample", func(b *testing.B) {
			cfg := loadgen.Config{Target: loadgen.TargetConfig{HTTP: httpURL, Protocol: p, Model: "add_sub"}, Load: loadgen.LoadConfig{Concurrency: 1}}
			if p.IsGRPC() {
				cfg.Target.HTTP, cfg.Target.GRPC = "", grpcAddr
			}
			tg, err := NewTarget(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer tg.Close()
			pl := &tg.payloads[0]
			var body []byte
			headerLen := -1
			if pl.post != nil {
				a, err := pl.post.Send(ctx, pl.keep)
				if err != nil {
					b.Fatal(err)
				}
				body, headerLen = a.Body, a.HeaderLen
			} else if body, err = pl.call.Send(ctx, true); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				kept := slices.Clone(body) // the client keeps a sampled body in a buffer of its own
				var r *oip.InferResponse
				if pl.post != nil {
					r, err = oip.DecodeRESTResponse(kept, headerLen)
				} else {
					r, err = decodeGRPCAnswer(kept)
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := tg.checkAnswer(pl, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
		for _, every := range []int{0, DefaultCheckEvery, 1} {
			b.Run(fmt.Sprintf("%s/check-every=%d", p, every), func(b *testing.B) {
				cfg := loadgen.Config{Target: loadgen.TargetConfig{HTTP: httpURL, Protocol: p, Model: "add_sub"}, Load: loadgen.LoadConfig{Concurrency: 1},
					Inputs: loadgen.InputConfig{CheckEvery: &every}}
				if p.IsGRPC() {
					cfg.Target.HTTP, cfg.Target.GRPC = "", grpcAddr
				}
				tg, err := NewTarget(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer tg.Close()
				for i := range uint64(200) { // warm
					if err := tg.Do(ctx, i); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				cpu0 := processCPU()
				for i := uint64(0); b.Loop(); i++ {
					if err := tg.Do(ctx, i); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// processCPU is this process's user and system CPU time in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
