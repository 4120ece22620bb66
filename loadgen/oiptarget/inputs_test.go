package oiptarget

import (
	"encoding/base64"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

func TestReadInputFilePerfAnalyzerForms(t *testing.T) {
	meta := &oip.ModelMetadata{
		Name:    "add_sub",
		Inputs:  []oip.TensorMetadata{{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{-1, 16}}, {Name: "INPUT1", Datatype: tensor.Int32, Shape: []int64{-1, 16}}},
		Outputs: []oip.TensorMetadata{{Name: "OUTPUT0", Datatype: tensor.Int32, Shape: []int64{-1, 16}}},
	}
	raw := make([]byte, 0, 64)
	for i := range 16 {
		raw = binary.LittleEndian.AppendUint32(raw, uint32(i))
	}
	ones := "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]"
	file := `{"data": [
	  {"INPUT0": {"content": [` + ones[1:len(ones)-1] + `,` + ones[1:len(ones)-1] + `], "shape": [2, 16]}, "INPUT1": [` + ones + `,` + ones + `]},
	  {"INPUT0": {"b64": "` + base64.StdEncoding.EncodeToString(raw) + `"}, "INPUT1": ` + ones + `}],
	 "validation_data": [{"OUTPUT0": {"content": [` + ones[1:len(ones)-1] + `,` + ones[1:len(ones)-1] + `], "shape": [2, 16]}}, {"OUTPUT0": ` + ones + `}]}`
	path := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	sets, err := readInputFile(path, meta, loadgen.InputConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		t.Fatalf("%d input sets, want 2", len(sets))
	}
	// Explicit shape; nested array with the batch dimension inferred; b64
	// raw bytes; a flat array inferred as [1,16].
	for i, want := range [][]int64{{2, 16}, {2, 16}, {1, 16}, {1, 16}} {
		if got := sets[i/2].inputs[i%2].Shape; !slices.Equal(got, want) {
			t.Errorf("data[%d] input %d: shape %v, want %v", i/2, i%2, got, want)
		}
	}
	if v := sets[1].inputs[0].Data.([]int32); v[15] != 15 {
		t.Errorf("b64 input decoded as %v", v)
	}
	if len(sets[0].expect) != 1 || !slices.Equal(sets[1].expect[0].Shape, []int64{1, 16}) {
		t.Errorf("validation data: %+v", sets[1].expect)
	}

	for name, bad := range map[string]string{
		"no data":        `{"data": []}`,
		"missing input":  `{"data": [{"INPUT0": ` + ones + `}]}`,
		"unknown input":  `{"data": [{"INPUT0": ` + ones + `, "INPUT1": ` + ones + `, "X": [1]}]}`,
		"wrong count":    `{"data": [{"INPUT0": [1,2,3], "INPUT1": ` + ones + `}]}`,
		"sequence files": `{"data": [[{"INPUT0": ` + ones + `}]]}`,
	} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readInputFile(path, meta, loadgen.InputConfig{}); err == nil {
			t.Errorf("%s: readInputFile succeeded", name)
		}
	}
}
