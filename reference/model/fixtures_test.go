package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/tensor"
)

func mustLookup(t *testing.T, r *Repository, name, version string) Model {
	t.Helper()
	m, _, err := r.Lookup(name, version)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func int32Tensor(name string, shape []int64, v []int32) tensor.Tensor {
	return tensor.Tensor{Name: name, Datatype: tensor.Int32, Shape: shape, Data: v}
}

// TestFixturesMatchContract checks every fixture the reference server ships
// against specs/fixtures.yaml: the core and reference-extra fixtures are all
// present, with the exact tensor names, datatypes, shapes and versions.
func TestFixturesMatchContract(t *testing.T) {
	fixtures, err := specs.LoadFixtures()
	if err != nil {
		t.Fatal(err)
	}
	repo := Fixtures(FixtureConfig{})
	shipped := map[string]bool{}
	for _, f := range fixtures {
		if f.Kind == specs.KindExtension && !slices.Contains(repo.Names(), f.Name) {
			continue // an extension fixture ships with the extension
		}
		shipped[f.Name] = true
		wantVersions := f.Versions
		if len(wantVersions) == 0 {
			wantVersions = []string{"1"}
		}
		md, err := repo.Metadata(f.Name, "")
		if err != nil {
			t.Errorf("fixture %s: %v", f.Name, err)
			continue
		}
		if !slices.Equal(md.Versions, wantVersions) {
			t.Errorf("%s versions = %q, want %q", f.Name, md.Versions, wantVersions)
		}
		if md.Platform != Platform {
			t.Errorf("%s platform = %q", f.Name, md.Platform)
		}
		compare := func(what string, got []oip.TensorMetadata, want []specs.FixtureTensor) {
			if len(got) != len(want) {
				t.Errorf("%s %s: %d tensors, want %d", f.Name, what, len(got), len(want))
				return
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Name != w.Name || string(g.Datatype) != w.Datatype || !slices.Equal(g.Shape, w.Shape) {
					t.Errorf("%s %s[%d] = %s %s %v, want %s %s %v", f.Name, what, i, g.Name, g.Datatype, g.Shape, w.Name, w.Datatype, w.Shape)
				}
			}
		}
		compare("inputs", md.Inputs, f.Inputs)
		compare("outputs", md.Outputs, f.Outputs)
	}
	for _, name := range repo.Names() {
		if !shipped[name] {
			t.Errorf("repository holds %q, which the fixture contract does not define", name)
		}
	}
	if got := len(repo.Names()); got != 21 {
		t.Errorf("%d fixture names, want 21 (add_sub, 14 identity, versioned, delay, stream_count, tokens, accumulate, text_gen)", got)
	}
}

func TestAddSub(t *testing.T) {
	m := NewAddSub()
	shape := []int64{1, 16}
	a := make([]int32, 16)
	b := make([]int32, 16)
	for i := range a {
		a[i] = int32(i)
		b[i] = 1
	}
	// Wrap-around at both ends.
	a[14], b[14] = math.MaxInt32, 1
	a[15], b[15] = math.MinInt32, 1
	outs, err := m.Infer(context.Background(), map[string]tensor.Tensor{
		"INPUT0": int32Tensor("INPUT0", shape, a),
		"INPUT1": int32Tensor("INPUT1", shape, b),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Name != "OUTPUT0" || outs[1].Name != "OUTPUT1" {
		t.Fatalf("outputs = %+v", outs)
	}
	sum, diff := outs[0].Data.([]int32), outs[1].Data.([]int32)
	for i := range 14 {
		if sum[i] != int32(i)+1 || diff[i] != int32(i)-1 {
			t.Errorf("element %d: sum %d diff %d", i, sum[i], diff[i])
		}
	}
	if sum[14] != math.MinInt32 || diff[14] != math.MaxInt32-1 {
		t.Errorf("MaxInt32 ± 1 = %d, %d", sum[14], diff[14])
	}
	if sum[15] != math.MinInt32+1 || diff[15] != math.MaxInt32 {
		t.Errorf("MinInt32 ± 1 = %d, %d", sum[15], diff[15])
	}
	for _, o := range outs {
		if err := o.Validate(); err != nil || !slices.Equal(o.Shape, shape) {
			t.Errorf("output %s: shape %v, %v", o.Name, o.Shape, err)
		}
	}
}

func TestAddSubShapeMismatch(t *testing.T) {
	_, err := NewAddSub().Infer(context.Background(), map[string]tensor.Tensor{
		"INPUT0": int32Tensor("INPUT0", []int64{1, 16}, make([]int32, 16)),
		"INPUT1": int32Tensor("INPUT1", []int64{2, 16}, make([]int32, 32)),
	}, nil)
	if !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("err = %v, want ErrInvalidInput", err)
	}
}

// sampleData holds a few elements of every datatype, extreme values included.
var sampleData = map[tensor.Datatype]any{
	tensor.Bool:   []bool{true, false, true, true, false, false},
	tensor.Uint8:  []uint8{0, 1, 2, 127, 128, 255},
	tensor.Uint16: []uint16{0, 1, 2, 3, 0x8000, math.MaxUint16},
	tensor.Uint32: []uint32{0, 1, 2, 3, 1 << 31, math.MaxUint32},
	tensor.Uint64: []uint64{0, 1, 1 << 53, 1<<53 + 1, 1 << 63, math.MaxUint64},
	tensor.Int8:   []int8{math.MinInt8, -1, 0, 1, 2, math.MaxInt8},
	tensor.Int16:  []int16{math.MinInt16, -1, 0, 1, 2, math.MaxInt16},
	tensor.Int32:  []int32{math.MinInt32, -1, 0, 1, 2, math.MaxInt32},
	tensor.Int64:  []int64{math.MinInt64, -1, 0, 1 << 53, 1<<53 + 1, math.MaxInt64},
	tensor.FP16:   []tensor.Float16{0, 0x8000, 0x3c00, 0x7bff, 0x7c00, 0x7e01},
	tensor.BF16:   []tensor.BFloat16{0, 0x8000, 0x3f80, 0x7f7f, 0x7f80, 0x7fc1},
	tensor.FP32:   []float32{0, float32(math.Copysign(0, -1)), 0.5, -1.25, math.MaxFloat32, float32(math.Inf(1))},
	tensor.FP64:   []float64{0, math.Copysign(0, -1), 0.1, -1e300, math.MaxFloat64, math.SmallestNonzeroFloat64},
	tensor.Bytes:  [][]byte{[]byte("a"), {}, []byte("bcd"), {0, 0xff}, []byte("é"), []byte("xyz")},
}

func TestIdentityEveryDatatype(t *testing.T) {
	if len(sampleData) != len(tensor.Datatypes) {
		t.Fatalf("sampleData covers %d datatypes, want %d", len(sampleData), len(tensor.Datatypes))
	}
	repo := Fixtures(FixtureConfig{})
	for _, d := range tensor.Datatypes {
		t.Run(string(d), func(t *testing.T) {
			m := mustLookup(t, repo, "identity_"+strings.ToLower(string(d)), "")
			in, err := tensor.New("INPUT0", d, []int64{2, 3}, sampleData[d])
			if err != nil {
				t.Fatal(err)
			}
			outs, err := m.Infer(context.Background(), map[string]tensor.Tensor{"INPUT0": in}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 1 {
				t.Fatalf("%d outputs", len(outs))
			}
			out := outs[0]
			if out.Name != "OUTPUT0" || out.Datatype != d || !slices.Equal(out.Shape, in.Shape) {
				t.Fatalf("output = %s %s %v", out.Name, out.Datatype, out.Shape)
			}
			if !reflect.DeepEqual(out.Data, in.Data) {
				t.Fatalf("output data %v, want %v", out.Data, in.Data)
			}
			// The output must not alias the input: scribble over the input.
			orig, _ := copyTensor(in, "x")
			scribble(in.Data)
			in.Shape[0] = 99
			if !reflect.DeepEqual(out.Data, orig.Data) || out.Shape[0] != 2 {
				t.Fatalf("output changed with the input: %v", out.Data)
			}
		})
	}
}

// scribble overwrites every element (every byte, for BYTES).
func scribble(data any) {
	v := reflect.ValueOf(data)
	for i := range v.Len() {
		e := v.Index(i)
		switch e.Kind() {
		case reflect.Bool:
			e.SetBool(!e.Bool())
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			e.SetUint(e.Uint() + 1)
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			e.SetInt(e.Int() + 1)
		case reflect.Float32, reflect.Float64:
			e.SetFloat(e.Float() + 1)
		case reflect.Slice:
			for j := range e.Len() {
				e.Index(j).SetUint(e.Index(j).Uint() + 1)
			}
		}
	}
}

func TestIdentityEmptyTensor(t *testing.T) {
	m := NewIdentity(tensor.FP32)
	in := tensor.Tensor{Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{1, 0}, Data: []float32{}}
	outs, err := m.Infer(context.Background(), map[string]tensor.Tensor{"INPUT0": in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := outs[0].Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestVersioned(t *testing.T) {
	repo := Fixtures(FixtureConfig{})
	for _, v := range []int32{1, 2} {
		m, got, err := repo.Lookup("versioned", string(rune('0'+v)))
		if err != nil || got != string(rune('0'+v)) {
			t.Fatalf("lookup version %d: %q, %v", v, got, err)
		}
		in := []int32{0, 5, -3, math.MaxInt32}
		outs, err := m.Infer(context.Background(), map[string]tensor.Tensor{"INPUT0": int32Tensor("INPUT0", []int64{4}, in)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []int32{v, 5 + v, -3 + v, math.MinInt32 + v - 1}
		if got := outs[0].Data.([]int32); !slices.Equal(got, want) {
			t.Errorf("version %d: %v, want %v", v, got, want)
		}
	}
}

func TestDelayParameter(t *testing.T) {
	in := map[string]tensor.Tensor{"INPUT0": {Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{2}, Data: []float32{1.5, -2}}}
	m := NewDelay(time.Hour) // the default must never be used below
	for _, p := range []oip.Parameters{
		{"delay_ms": int64(1)},
		{"delay_ms": uint64(1)},
		{"delay_ms": 0.5},
		{"delay_ms": int64(0)},
	} {
		outs, err := m.Infer(context.Background(), in, p)
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		if got := outs[0].Data.([]float32); !slices.Equal(got, []float32{1.5, -2}) || outs[0].Name != "OUTPUT0" {
			t.Fatalf("%v: output %s %v", p, outs[0].Name, got)
		}
	}
	for _, p := range []oip.Parameters{
		{"delay_ms": "10"},
		{"delay_ms": true},
		{"delay_ms": int64(-1)},
		{"delay_ms": math.NaN()},
		{"delay_ms": math.Inf(1)},
		{"delay_ms": float64(MaxDelay/time.Millisecond) + 1},
		{"delay_ms": uint64(math.MaxUint64)},
		{"delay_ms": map[string]any{}},
	} {
		if _, err := m.Infer(context.Background(), in, p); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%v: err = %v, want ErrInvalidInput", p, err)
		}
	}
}

func TestDelaySleepsAndHonoursCancellation(t *testing.T) {
	in := map[string]tensor.Tensor{"INPUT0": {Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{1}, Data: []float32{1}}}
	start := time.Now()
	if _, err := NewDelay(30*time.Millisecond).Infer(context.Background(), in, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("default delay slept %v, want >= 30ms", d)
	}
	start = time.Now()
	if _, err := NewDelay(0).Infer(context.Background(), in, oip.Parameters{"delay_ms": 20.5}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("delay_ms 20.5 slept %v", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := NewDelay(0).Infer(ctx, in, oip.Parameters{"delay_ms": int64(50_000)})
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("delay ignored cancellation")
	}
}

func TestDecoupledFixtures(t *testing.T) {
	in := func(n int32) map[string]tensor.Tensor {
		return map[string]tensor.Tensor{"INPUT0": int32Tensor("INPUT0", []int64{1}, []int32{n})}
	}
	var got []string
	send := func(outs []tensor.Tensor, final bool) error {
		s := fmt.Sprint(outs[0].Data.([]int32)[0], final)
		if len(outs) > 1 {
			s += " " + string(outs[1].Data.([][]byte)[0])
		}
		got = append(got, s)
		return nil
	}
	if err := NewStreamCount().InferStream(context.Background(), in(3), nil, send); err != nil || fmt.Sprint(got) != "[1 false 2 false 3 true]" {
		t.Fatalf("stream_count 3: %q %v", got, err)
	}
	got = nil
	if err := NewStreamCount().InferStream(context.Background(), in(0), nil, send); err != nil || got != nil {
		t.Fatalf("stream_count 0: %q %v", got, err)
	}
	if err := NewTokens(0).InferStream(context.Background(), in(2), nil, send); err != nil || fmt.Sprint(got) != "[1 false the  2 true quick ]" {
		t.Fatalf("tokens 2: %q %v", got, err)
	}
	for _, n := range []int32{-1, MaxStreamResponses + 1} {
		if err := NewStreamCount().InferStream(context.Background(), in(n), nil, send); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("stream_count %d: %v, want ErrInvalidInput", n, err)
		}
	}
	if _, err := NewStreamCount().Infer(context.Background(), in(1), nil); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("unary stream_count: %v, want ErrInvalidInput", err)
	}
	if err := NewTokens(0).InferStream(context.Background(), in(1), oip.Parameters{ParamIntervalMS: "x"}, send); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("tokens with interval_ms \"x\": %v", err)
	}
}
