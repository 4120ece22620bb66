package model

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// The fixture contract (specs/fixtures.yaml)
// fixes every name, datatype and shape below.

// Tensor names used by the fixtures.
const (
	input0  = "INPUT0"
	input1  = "INPUT1"
	output0 = "OUTPUT0"
	output1 = "OUTPUT1"
)

// ParamDelayMS is the request parameter that sets the delay model's sleep in
// milliseconds (integer or fractional).
const ParamDelayMS = "delay_ms"

// MaxDelay bounds delay_ms so that a request cannot pin a goroutine for an
// unbounded time.
const MaxDelay = time.Minute

// FixtureConfig configures the fixture models.
type FixtureConfig struct {
	// DefaultDelay is the delay model's sleep when a request carries no
	// delay_ms; zero or negative means no sleep.
	DefaultDelay time.Duration
	// TokenInterval is the tokens model's gap between responses when a
	// request carries no interval_ms; zero or negative means no gap.
	TokenInterval time.Duration
}

// Fixtures returns a repository holding every fixture model: add_sub,
// identity_<t> for all 14 datatypes (BF16 included), versioned versions 1 and
// 2, delay, the decoupled stream_count, tokens and text_gen, and the
// stateful accumulate.
func Fixtures(cfg FixtureConfig) *Repository {
	r := NewRepository()
	models := []Model{NewAddSub(), NewVersioned(1), NewVersioned(2), NewDelay(cfg.DefaultDelay),
		NewStreamCount(), NewTokens(cfg.TokenInterval), NewAccumulate(), NewTextGen()}
	for _, d := range tensor.Datatypes {
		models = append(models, NewIdentity(d))
	}
	for _, m := range models {
		if err := r.Add(m); err != nil {
			panic(err) // the fixture set is static; a clash is a programming error
		}
	}
	return r
}

func metadata(name, version string, inputs, outputs []oip.TensorMetadata) oip.ModelMetadata {
	return oip.ModelMetadata{
		Name:     name,
		Versions: []string{version},
		Platform: Platform,
		Inputs:   inputs,
		Outputs:  outputs,
	}
}

// addSub is the add_sub fixture: OUTPUT0 = INPUT0 + INPUT1 and
// OUTPUT1 = INPUT0 - INPUT1, element-wise INT32 with wrap-around.
type addSub struct{ md oip.ModelMetadata }

// NewAddSub returns the add_sub fixture (version 1).
func NewAddSub() Model {
	shape := []int64{-1, 16}
	t := func(name string) oip.TensorMetadata {
		return oip.TensorMetadata{Name: name, Datatype: tensor.Int32, Shape: shape}
	}
	return addSub{md: metadata("add_sub", "1",
		[]oip.TensorMetadata{t(input0), t(input1)},
		[]oip.TensorMetadata{t(output0), t(output1)})}
}

func (m addSub) Metadata() oip.ModelMetadata { return m.md }

func (m addSub) Infer(_ context.Context, inputs map[string]tensor.Tensor, _ oip.Parameters) ([]tensor.Tensor, error) {
	a, b := inputs[input0], inputs[input1]
	if !slices.Equal(a.Shape, b.Shape) {
		return nil, fmt.Errorf("%w: %s shape %v and %s shape %v differ", ErrInvalidInput, input0, a.Shape, input1, b.Shape)
	}
	x, okX := a.Data.([]int32)
	y, okY := b.Data.([]int32)
	if !okX || !okY || len(x) != len(y) {
		return nil, fmt.Errorf("add_sub: inputs hold %T and %T, want equal-length []int32", a.Data, b.Data)
	}
	sum := make([]int32, len(x))
	diff := make([]int32, len(x))
	for i := range x {
		sum[i] = x[i] + y[i] // Go integer arithmetic wraps, as the contract requires
		diff[i] = x[i] - y[i]
	}
	return []tensor.Tensor{
		{Name: output0, Datatype: tensor.Int32, Shape: slices.Clone(a.Shape), Data: sum},
		{Name: output1, Datatype: tensor.Int32, Shape: slices.Clone(a.Shape), Data: diff},
	}, nil
}

// identity is identity_<t>: OUTPUT0 is a copy of INPUT0.
type identity struct{ md oip.ModelMetadata }

// NewIdentity returns the identity_<t> fixture for datatype d (version 1),
// named with d's lower-case name (identity_fp32).
func NewIdentity(d tensor.Datatype) Model {
	shape := []int64{-1, -1}
	return identity{md: metadata("identity_"+d.Lower(), "1",
		[]oip.TensorMetadata{{Name: input0, Datatype: d, Shape: shape}},
		[]oip.TensorMetadata{{Name: output0, Datatype: d, Shape: shape}})}
}

func (m identity) Metadata() oip.ModelMetadata { return m.md }

func (m identity) Infer(_ context.Context, inputs map[string]tensor.Tensor, _ oip.Parameters) ([]tensor.Tensor, error) {
	out, err := copyTensor(inputs[input0], output0)
	if err != nil {
		return nil, err
	}
	return []tensor.Tensor{out}, nil
}

// versioned is one version of the versioned fixture: OUTPUT0 = INPUT0 + v.
type versioned struct {
	md oip.ModelMetadata
	v  int32
}

// NewVersioned returns version v of the versioned fixture.
func NewVersioned(v int32) Model {
	shape := []int64{-1}
	return versioned{v: v, md: metadata("versioned", strconv.Itoa(int(v)),
		[]oip.TensorMetadata{{Name: input0, Datatype: tensor.Int32, Shape: shape}},
		[]oip.TensorMetadata{{Name: output0, Datatype: tensor.Int32, Shape: shape}})}
}

func (m versioned) Metadata() oip.ModelMetadata { return m.md }

func (m versioned) Infer(_ context.Context, inputs map[string]tensor.Tensor, _ oip.Parameters) ([]tensor.Tensor, error) {
	in := inputs[input0]
	x, ok := in.Data.([]int32)
	if !ok {
		return nil, fmt.Errorf("versioned: %s holds %T, want []int32", input0, in.Data)
	}
	out := make([]int32, len(x))
	for i, e := range x {
		out[i] = e + m.v
	}
	return []tensor.Tensor{{Name: output0, Datatype: tensor.Int32, Shape: slices.Clone(in.Shape), Data: out}}, nil
}

// delay returns INPUT0 unchanged after sleeping delay_ms.
type delay struct {
	md  oip.ModelMetadata
	def time.Duration
}

// NewDelay returns the delay fixture (version 1), sleeping def when a request
// has no delay_ms parameter.
func NewDelay(def time.Duration) Model {
	shape := []int64{-1}
	return delay{def: max(def, 0), md: metadata("delay", "1",
		[]oip.TensorMetadata{{Name: input0, Datatype: tensor.FP32, Shape: shape}},
		[]oip.TensorMetadata{{Name: output0, Datatype: tensor.FP32, Shape: shape}})}
}

func (m delay) Metadata() oip.ModelMetadata { return m.md }

func (m delay) Infer(ctx context.Context, inputs map[string]tensor.Tensor, params oip.Parameters) ([]tensor.Tensor, error) {
	d, err := delayOf(params, m.def)
	if err != nil {
		return nil, err
	}
	if err := sleepPrecisely(ctx, d); err != nil {
		return nil, fmt.Errorf("delay: %w", err)
	}
	out, err := copyTensor(inputs[input0], output0)
	if err != nil {
		return nil, err
	}
	return []tensor.Tensor{out}, nil
}

// delayOf reads delay_ms (an integer or float number of milliseconds).
func delayOf(params oip.Parameters, def time.Duration) (time.Duration, error) {
	v, ok := params[ParamDelayMS]
	if !ok {
		return def, nil
	}
	var ms float64
	switch x := v.(type) {
	case int64:
		ms = float64(x)
	case uint64:
		ms = float64(x)
	case float64:
		ms = x
	case int:
		ms = float64(x)
	default:
		return 0, fmt.Errorf("%w: parameter %s is %T, want a number of milliseconds", ErrInvalidInput, ParamDelayMS, v)
	}
	if math.IsNaN(ms) || ms < 0 || ms > float64(MaxDelay/time.Millisecond) {
		return 0, fmt.Errorf("%w: parameter %s is %v, want 0 to %d milliseconds", ErrInvalidInput, ParamDelayMS, v, MaxDelay/time.Millisecond)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// copyTensor returns a deep copy of t named name, so that outputs never
// alias request memory (decoders may hand out slices of the request body).
func copyTensor(t tensor.Tensor, name string) (tensor.Tensor, error) {
	var data any
	switch v := t.Data.(type) {
	case []bool:
		data = slices.Clone(v)
	case []uint8:
		data = slices.Clone(v)
	case []uint16:
		data = slices.Clone(v)
	case []uint32:
		data = slices.Clone(v)
	case []uint64:
		data = slices.Clone(v)
	case []int8:
		data = slices.Clone(v)
	case []int16:
		data = slices.Clone(v)
	case []int32:
		data = slices.Clone(v)
	case []int64:
		data = slices.Clone(v)
	case []tensor.Float16:
		data = slices.Clone(v)
	case []tensor.BFloat16:
		data = slices.Clone(v)
	case []float32:
		data = slices.Clone(v)
	case []float64:
		data = slices.Clone(v)
	case [][]byte:
		data = cloneBytes(v)
	default:
		return tensor.Tensor{}, fmt.Errorf("copy tensor %q: unsupported data %T", t.Name, t.Data)
	}
	return tensor.Tensor{Name: name, Datatype: t.Datatype, Shape: slices.Clone(t.Shape), Data: data}, nil
}

// cloneBytes copies BYTES elements into one new backing array.
func cloneBytes(v [][]byte) [][]byte {
	n := 0
	for _, e := range v {
		n += len(e)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(v))
	for i, e := range v {
		start := len(buf)
		buf = append(buf, e...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// The delay fixture exists to give load generators a known service time, so
// it sleeps precisely without burning a CPU that the client on the same
// machine needs. Go timers wake up to about a millisecond late for short
// waits (the netpoller sleeps in whole milliseconds), so sleepPrecisely uses
// a timer for all but the last timerSlack, a nanosleep of the goroutine's
// thread (hrtimer, late by ~50-100 µs) to spinAhead before the deadline, and
// yields for the rest.
const (
	timerSlack = 2 * time.Millisecond
	spinAhead  = 100 * time.Microsecond
)

// sleepPrecisely waits d, honouring ctx except during the final nanosleep
// (at most timerSlack).
func sleepPrecisely(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	deadline := time.Now().Add(d)
	if d > timerSlack+spinAhead {
		t := time.NewTimer(d - timerSlack)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	for {
		rem := time.Until(deadline)
		switch {
		case rem <= 0:
			return nil
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case rem > spinAhead:
			ts := syscall.NsecToTimespec(int64(rem - spinAhead))
			_ = syscall.Nanosleep(&ts, nil) // EINTR only shortens the sleep
		default:
			runtime.Gosched()
		}
	}
}
