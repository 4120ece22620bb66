package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/tensor"
)

// checkOutputs compares a response with the expected outputs: each expected
// output must be present with the same datatype, shape and elements
// (bit-exact, compared through the raw encoding, so float NaNs compare equal
// to NaNs of the same bits). expectRaw holds expect's raw encodings, made
// once per payload rather than per response.
func checkOutputs(expect []tensor.Tensor, expectRaw [][]byte, r *oip.InferResponse) error {
	for i, want := range expect {
		got, ok := r.Output(want.Name)
		if !ok {
			return &ValidationError{Detail: fmt.Sprintf("output %q missing", want.Name)}
		}
		switch {
		case got.Datatype != want.Datatype:
			return &ValidationError{Detail: fmt.Sprintf("output %q: datatype %s, want %s", want.Name, got.Datatype, want.Datatype)}
		case !slices.Equal(got.Shape, want.Shape):
			return &ValidationError{Detail: fmt.Sprintf("output %q: shape %v, want %v", want.Name, got.Shape, want.Shape)}
		}
		gb, err := tensor.EncodeRaw(got.Tensor)
		if err != nil || !bytes.Equal(gb, expectRaw[i]) {
			return &ValidationError{Detail: fmt.Sprintf("output %q: elements differ from the expected values", want.Name)}
		}
	}
	return nil
}

// fixtureExpectations computes the expected outputs of the oipkit fixture
// models by running the reference executor on each input set once, before
// the run. It refuses models that are not fixtures, or whose metadata on
// the server differs from the fixture's (a same-named model of another
// server).
func fixtureExpectations(ctx context.Context, meta *oip.ModelMetadata, version string, params oip.Parameters, sets []inputSet) error {
	repo := model.Fixtures(model.FixtureConfig{})
	m, _, err := repo.Lookup(meta.Name, version)
	if errors.Is(err, model.ErrNotFound) {
		return configErr("--validate: model %q is not an oipkit fixture and the input data has no validation_data", meta.Name)
	}
	if err != nil {
		return configErr("--validate: %v", err)
	}
	fm := m.Metadata()
	if !sameTensors(fm.Inputs, meta.Inputs) || !sameTensors(fm.Outputs, meta.Outputs) {
		return configErr("--validate: the server's %q differs from the oipkit fixture of that name; give validation_data", meta.Name)
	}
	for i := range sets {
		in := map[string]tensor.Tensor{}
		for _, t := range sets[i].inputs {
			in[t.Name] = t
		}
		outs, err := m.Infer(ctx, in, params)
		if err != nil {
			return configErr("--validate: fixture %q on request %d: %v", meta.Name, i, err)
		}
		sets[i].expect = outs
	}
	return nil
}

func sameTensors(a, b []oip.TensorMetadata) bool {
	return slices.EqualFunc(a, b, func(x, y oip.TensorMetadata) bool {
		return x.Name == y.Name && x.Datatype == y.Datatype && slices.Equal(x.Shape, y.Shape)
	})
}
