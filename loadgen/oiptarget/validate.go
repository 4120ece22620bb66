package oiptarget

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
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
			return &loadgen.ValidationError{Detail: fmt.Sprintf("output %q missing", want.Name)}
		}
		switch {
		case got.Datatype != want.Datatype:
			return &loadgen.ValidationError{Detail: fmt.Sprintf("output %q: datatype %s, want %s", want.Name, got.Datatype, want.Datatype)}
		case !slices.Equal(got.Shape, want.Shape):
			return &loadgen.ValidationError{Detail: fmt.Sprintf("output %q: shape %v, want %v", want.Name, got.Shape, want.Shape)}
		}
		gb, err := tensor.EncodeRaw(got.Tensor)
		if err != nil || !bytes.Equal(gb, expectRaw[i]) {
			return &loadgen.ValidationError{Detail: fmt.Sprintf("output %q: elements differ from the expected values", want.Name)}
		}
	}
	return nil
}

// fixtureExpectations computes the expected outputs of the oipkit fixture
// models with the fixture oracle (package fixture), once per input set
// before the run. It refuses models that are not fixtures, fixtures with no
// single answer per request (decoupled, stateful), and models whose
// metadata on the server differs from the fixture's (a same-named model of
// another server).
func fixtureExpectations(meta *oip.ModelMetadata, version string, params oip.Parameters, sets []inputSet) error {
	m, err := fixture.Lookup(meta.Name, version)
	if errors.Is(err, fixture.ErrNotFixture) {
		return configErr("Inputs.Validate: model %q is not an oipkit fixture and the input data has no validation_data", meta.Name)
	}
	if err != nil {
		return configErr("Inputs.Validate: %v", err)
	}
	fm := m.Metadata()
	if !fixture.SameTensors(fm.Inputs, meta.Inputs) || !fixture.SameTensors(fm.Outputs, meta.Outputs) {
		return configErr("Inputs.Validate: the server's %q differs from the oipkit fixture of that name; give validation_data", meta.Name)
	}
	for i := range sets {
		in := map[string]tensor.Tensor{}
		for _, t := range sets[i].inputs {
			in[t.Name] = t
		}
		outs, err := fixture.Outputs(m, in, params)
		if err != nil {
			return configErr("Inputs.Validate: fixture %q on request %d: %v", meta.Name, i, err)
		}
		sets[i].expect = outs
	}
	return nil
}
