package oiptarget

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// An inputSet is the inputs of one distinct request and, when known, the
// outputs a correct server returns for them.
type inputSet struct {
	inputs []tensor.Tensor
	expect []tensor.Tensor // nil: nothing to validate against
}

// parseShapes parses Inputs.Shapes values "NAME:d1,d2,...".
func parseShapes(specs []string) (map[string][]int64, error) {
	out := map[string][]int64{}
	for _, s := range specs {
		name, dims, ok := strings.Cut(s, ":")
		if !ok || name == "" || dims == "" {
			return nil, configErr("shape %q: want NAME:d1,d2,...", s)
		}
		var shape []int64
		for _, d := range strings.Split(dims, ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(d), 10, 64)
			if err != nil || v < 0 {
				return nil, configErr("shape %q: %q is not a dimension", s, d)
			}
			shape = append(shape, v)
		}
		out[name] = shape
	}
	return out, nil
}

// shapesFor parses Inputs.Shapes values and checks that each names an input of
// the model: a misspelt name would otherwise be ignored silently.
func shapesFor(specs []string, meta *oip.ModelMetadata) (map[string][]int64, error) {
	shapes, err := parseShapes(specs)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, in := range meta.Inputs {
		names = append(names, in.Name)
	}
	for name := range shapes {
		if !slices.Contains(names, name) {
			return nil, configErr("Inputs.Shapes %s: model %q has no input %q (its inputs: %s)", name, meta.Name, name, strings.Join(names, ", "))
		}
	}
	return shapes, nil
}

// concreteShape resolves a metadata shape: a Inputs.Shapes for the tensor wins
// (and must match the metadata); otherwise each -1 becomes 1.
func concreteShape(md oip.TensorMetadata, shapes map[string][]int64) ([]int64, error) {
	if s, ok := shapes[md.Name]; ok {
		if !tensor.ShapeMatches(md.Shape, s) {
			return nil, configErr("Inputs.Shapes %s:%v does not fit the model's shape %v", md.Name, s, md.Shape)
		}
		return s, nil
	}
	s := make([]int64, len(md.Shape))
	for i, d := range md.Shape {
		s[i] = max(d, 1)
	}
	return s, nil
}

// synthesize makes one input set from model metadata: random (seeded) or
// zero data of each input's datatype and shape.
func synthesize(meta *oip.ModelMetadata, in loadgen.InputConfig) ([]inputSet, error) {
	shapes, err := shapesFor(in.Shapes, meta)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(in.Seed, in.Seed+1))
	var set inputSet
	for _, md := range meta.Inputs {
		shape, err := concreteShape(md, shapes)
		if err != nil {
			return nil, err
		}
		t, err := tensor.Zero(md.Name, md.Datatype, shape)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", md.Name, err)
		}
		if in.Data == "random" {
			fillRandom(t.Data, rng, in.StringLength)
		} else if b, ok := t.Data.([][]byte); ok {
			for i := range b {
				b[i] = bytes.Repeat([]byte{'0'}, in.StringLength)
			}
		}
		set.inputs = append(set.inputs, t)
	}
	return []inputSet{set}, nil
}

// fillRandom fills a tensor's element slice with random values: integers
// over the type's range, floats in [0, 1), BYTES as lower-case letters.
func fillRandom(data any, rng *rand.Rand, strLen int) {
	switch v := data.(type) {
	case []bool:
		for i := range v {
			v[i] = rng.IntN(2) == 1
		}
	case []uint8:
		for i := range v {
			v[i] = uint8(rng.Uint32())
		}
	case []uint16:
		for i := range v {
			v[i] = uint16(rng.Uint32())
		}
	case []uint32:
		for i := range v {
			v[i] = rng.Uint32()
		}
	case []uint64:
		for i := range v {
			v[i] = rng.Uint64()
		}
	case []int8:
		for i := range v {
			v[i] = int8(rng.Uint32())
		}
	case []int16:
		for i := range v {
			v[i] = int16(rng.Uint32())
		}
	case []int32:
		for i := range v {
			v[i] = int32(rng.Uint32())
		}
	case []int64:
		for i := range v {
			v[i] = int64(rng.Uint64())
		}
	case []tensor.Float16:
		for i := range v {
			v[i] = tensor.Float16FromFloat32(rng.Float32())
		}
	case []tensor.BFloat16:
		for i := range v {
			v[i] = tensor.BFloat16FromFloat32(rng.Float32())
		}
	case []float32:
		for i := range v {
			v[i] = rng.Float32()
		}
	case []float64:
		for i := range v {
			v[i] = rng.Float64()
		}
	case [][]byte:
		for i := range v {
			b := make([]byte, strLen)
			for j := range b {
				b[j] = byte('a' + rng.IntN(26))
			}
			v[i] = b
		}
	}
}

// inputFile is a perf_analyzer input-data file: "data" holds one object per
// distinct request, keyed by input name; "validation_data" optionally holds
// the expected outputs of each, keyed by output name.
type inputFile struct {
	Data           []map[string]json.RawMessage `json:"data"`
	ValidationData []map[string]json.RawMessage `json:"validation_data"`
}

// tensorJSON is the object form of a tensor in an input-data file.
type tensorJSON struct {
	Content json.RawMessage `json:"content"`
	Shape   []int64         `json:"shape"`
	B64     *string         `json:"b64"`
}

// readInputFile reads a perf_analyzer-compatible input-data file. Each
// tensor is a JSON array of elements (nested or flat), an object
// {"content": [...], "shape": [...]}, or {"b64": "..."} holding the raw
// little-endian bytes (BYTES elements 4-byte length-prefixed). Without an
// explicit shape the metadata shape is used, with Inputs.Shapes for variable
// dimensions or, when exactly one dimension is variable, that dimension
// inferred from the element count.
func readInputFile(path string, meta *oip.ModelMetadata, in loadgen.InputConfig) ([]inputSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, configErr("input data: %v", err)
	}
	var f inputFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, configErr("input data %s: %v (streams of sequences are not supported)", path, err)
	}
	if len(f.Data) == 0 {
		return nil, configErr("input data %s: \"data\" holds no requests", path)
	}
	if len(f.ValidationData) > 0 && len(f.ValidationData) != len(f.Data) {
		return nil, configErr("input data %s: %d validation_data entries for %d data entries", path, len(f.ValidationData), len(f.Data))
	}
	shapes, err := shapesFor(in.Shapes, meta)
	if err != nil {
		return nil, err
	}
	sets := make([]inputSet, len(f.Data))
	for i, entry := range f.Data {
		for _, md := range meta.Inputs {
			raw, ok := entry[md.Name]
			if !ok {
				return nil, configErr("input data %s: data[%d] lacks input %q", path, i, md.Name)
			}
			t, err := decodeFileTensor(md, raw, shapes)
			if err != nil {
				return nil, configErr("input data %s: data[%d]: %v", path, i, err)
			}
			sets[i].inputs = append(sets[i].inputs, t)
		}
		for name := range entry {
			if !hasTensor(meta.Inputs, name) {
				return nil, configErr("input data %s: data[%d] has %q, which is not an input of %s", path, i, name, meta.Name)
			}
		}
		if len(f.ValidationData) == 0 {
			continue
		}
		for name, raw := range f.ValidationData[i] {
			md, ok := findTensor(meta.Outputs, name)
			if !ok {
				return nil, configErr("input data %s: validation_data[%d] has %q, which is not an output of %s", path, i, name, meta.Name)
			}
			t, err := decodeFileTensor(md, raw, shapes)
			if err != nil {
				return nil, configErr("input data %s: validation_data[%d]: %v", path, i, err)
			}
			sets[i].expect = append(sets[i].expect, t)
		}
	}
	return sets, nil
}

func decodeFileTensor(md oip.TensorMetadata, raw json.RawMessage, shapes map[string][]int64) (tensor.Tensor, error) {
	var obj tensorJSON
	content := raw
	var shape []int64
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return tensor.Tensor{}, fmt.Errorf("tensor %q: %w", md.Name, err)
		}
		content, shape = obj.Content, obj.Shape
		if obj.B64 != nil {
			b, err := base64.StdEncoding.DecodeString(*obj.B64)
			if err != nil {
				return tensor.Tensor{}, fmt.Errorf("tensor %q: b64: %w", md.Name, err)
			}
			if shape == nil {
				if shape, err = concreteShape(md, shapes); err != nil {
					return tensor.Tensor{}, err
				}
				shape = inferDim(md.Shape, shape, rawCount(md.Datatype, b), shapes[md.Name] != nil)
			}
			return tensor.DecodeRaw(md.Name, md.Datatype, shape, b)
		}
		if content == nil {
			return tensor.Tensor{}, fmt.Errorf("tensor %q: want \"content\" or \"b64\"", md.Name)
		}
	}
	if shape == nil {
		s, err := concreteShape(md, shapes)
		if err != nil {
			return tensor.Tensor{}, err
		}
		n, err := countLeaves(content)
		if err != nil {
			return tensor.Tensor{}, fmt.Errorf("tensor %q: %w", md.Name, err)
		}
		shape = inferDim(md.Shape, s, n, shapes[md.Name] != nil)
	}
	if !tensor.ShapeMatches(md.Shape, shape) {
		return tensor.Tensor{}, fmt.Errorf("tensor %q: shape %v does not fit the model's %v", md.Name, shape, md.Shape)
	}
	data, err := tensor.DecodeJSONData(md.Datatype, shape, content, 0)
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("tensor %q: %w", md.Name, err)
	}
	return tensor.New(md.Name, md.Datatype, shape, data)
}

// inferDim sets the single variable dimension of meta so that shape holds
// n elements, unless Inputs.Shapes fixed the shape or that is impossible.
func inferDim(meta, shape []int64, n int64, fixed bool) []int64 {
	if fixed || n < 0 {
		return shape
	}
	vi, rest := -1, int64(1)
	for i, d := range meta {
		if d == -1 {
			if vi >= 0 {
				return shape
			}
			vi = i
			continue
		}
		rest *= d
	}
	if vi < 0 || rest == 0 || n%rest != 0 {
		return shape
	}
	out := append([]int64(nil), shape...)
	out[vi] = n / rest
	return out
}

// rawCount is the element count of raw bytes of datatype d, or -1 for BYTES.
func rawCount(d tensor.Datatype, b []byte) int64 {
	if s := d.Size(); s > 0 {
		return int64(len(b) / s)
	}
	return -1
}

// countLeaves counts the scalar elements of a (nested) JSON array.
func countLeaves(raw json.RawMessage) (int64, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, err
	}
	var walk func(any) int64
	walk = func(v any) int64 {
		a, ok := v.([]any)
		if !ok {
			return 1
		}
		var n int64
		for _, e := range a {
			n += walk(e)
		}
		return n
	}
	return walk(v), nil
}

func findTensor(ts []oip.TensorMetadata, name string) (oip.TensorMetadata, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return oip.TensorMetadata{}, false
}

func hasTensor(ts []oip.TensorMetadata, name string) bool {
	_, ok := findTensor(ts, name)
	return ok
}

// parseParameters parses Inputs.Parameters values "name=value": integers, floats,
// true/false, anything else a string.
func parseParameters(specs []string) (oip.Parameters, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	p := oip.Parameters{}
	for _, s := range specs {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, configErr("parameter %q: want name=value", s)
		}
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			p[k] = i
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			p[k] = f
		} else if b, err := strconv.ParseBool(v); err == nil && (v == "true" || v == "false") {
			p[k] = b
		} else {
			p[k] = v
		}
	}
	return p, nil
}
