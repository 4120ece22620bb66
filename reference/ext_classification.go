package reference

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/tensor"
)

// The classification extension (Triton's): a requested output carrying the
// parameter "classification": k is returned as its k highest-valued
// classes instead of its values. Each class is a BYTES element
// "<value>:<index>", or "<value>:<index>:<label>" when the model has labels
// for the output. Classes are the last dimension of the output: an output of
// shape [batch, n] gives [batch, k], one of shape [n] gives [k]. k above n
// returns every class. It has no routes of its own: the inference path
// validates the parameter (validateRequest) and applies it (response), over
// REST and gRPC alike.

var extClassification = extension{name: specs.ExtClassification, advertised: true}

// paramClassification is the requested-output parameter of the extension.
const paramClassification = "classification"

// labeler is a model with class labels for some of its outputs.
type labeler interface {
	// Labels returns the labels of output's classes, by index; nil when the
	// output has none.
	Labels(output string) []string
}

// labelsOf returns m's labels, or nil when it has none.
func labelsOf(m model.Model) labeler {
	l, _ := m.(labeler)
	return l
}

// classificationCount reads the classification parameter of a requested
// output: ok is false when it is absent; an error when it is not an integer
// of at least 1 or the output cannot be classified.
func classificationCount(md *oip.ModelMetadata, out *oip.RequestedOutput) (k int64, ok bool, err error) {
	v, present := out.Parameters[paramClassification]
	if !present {
		return 0, false, nil
	}
	k, isInt := out.Parameters.Int(paramClassification)
	if !isInt || k < 1 {
		return 0, false, fmt.Errorf("parameter %q is %v; want an integer of at least 1 (the number of classes)", paramClassification, v)
	}
	meta := findTensor(md.Outputs, out.Name)
	if meta != nil && (meta.Datatype == tensor.Bytes || meta.Datatype == tensor.Bool || len(meta.Shape) == 0) {
		return 0, false, fmt.Errorf("output %q is %s %v; classification needs a numeric output of rank 1 or more", out.Name, meta.Datatype, meta.Shape)
	}
	return k, true, nil
}

// classify returns the top k classes of each row of t (its last dimension)
// as a BYTES tensor of the same name.
func classify(t tensor.Tensor, k int64, labels []string) (tensor.Tensor, error) {
	if len(t.Shape) == 0 {
		return tensor.Tensor{}, fmt.Errorf("output %q is a scalar; classification needs rank 1 or more", t.Name)
	}
	n := t.Shape[len(t.Shape)-1]
	k = min(k, n)
	values, err := classValues(t)
	if err != nil {
		return tensor.Tensor{}, err
	}
	if values.len() == 0 {
		// No rows (a zero dimension): nothing to rank, and no index buffer
		// sized by a dimension that holds nothing.
		shape := slices.Clone(t.Shape)
		shape[len(shape)-1] = k
		return tensor.Tensor{Name: t.Name, Datatype: tensor.Bytes, Shape: shape, Data: [][]byte{}}, nil
	}
	rows := int64(values.len()) / n
	out := make([][]byte, 0, rows*k)
	idx := make([]int, n)
	for r := range rows {
		base := int(r * n)
		for i := range idx {
			idx[i] = i
		}
		// Highest first; ties and NaN keep index order (stable, NaN lowest).
		slices.SortStableFunc(idx, func(a, b int) int { return values.compare(base+b, base+a) })
		for _, i := range idx[:k] {
			s := values.text(base + i)
			s = append(s, ':')
			s = strconv.AppendInt(s, int64(i), 10)
			if i < len(labels) {
				s = append(s, ':')
				s = append(s, labels[i]...)
			}
			out = append(out, s)
		}
	}
	shape := slices.Clone(t.Shape)
	shape[len(shape)-1] = k
	return tensor.Tensor{Name: t.Name, Datatype: tensor.Bytes, Shape: shape, Data: out}, nil
}

// classes are the elements of a numeric tensor, compared in its datatype.
type classes interface {
	len() int
	compare(i, j int) int
	text(i int) []byte
}

type ordered[T cmp.Ordered] struct {
	v      []T
	format func(T) []byte
}

func (o ordered[T]) len() int { return len(o.v) }
func (o ordered[T]) compare(i, j int) int {
	a, b := o.v[i], o.v[j]
	// cmp.Compare orders NaN below every number, as wanted.
	return cmp.Compare(a, b)
}
func (o ordered[T]) text(i int) []byte { return o.format(o.v[i]) }

func intText[T int8 | int16 | int32 | int64](v T) []byte { return strconv.AppendInt(nil, int64(v), 10) }
func uintText[T uint8 | uint16 | uint32 | uint64](v T) []byte {
	return strconv.AppendUint(nil, uint64(v), 10)
}

// floatText writes a value as C++'s std::to_string does (Triton's format):
// six decimals.
func floatText[T float32 | float64](v T) []byte {
	if math.IsNaN(float64(v)) {
		return []byte("nan")
	}
	return strconv.AppendFloat(nil, float64(v), 'f', 6, 64)
}

// classValues views a numeric tensor's data for classification.
func classValues(t tensor.Tensor) (classes, error) {
	switch v := t.Data.(type) {
	case []int8:
		return ordered[int8]{v, intText[int8]}, nil
	case []int16:
		return ordered[int16]{v, intText[int16]}, nil
	case []int32:
		return ordered[int32]{v, intText[int32]}, nil
	case []int64:
		return ordered[int64]{v, intText[int64]}, nil
	case []uint8:
		return ordered[uint8]{v, uintText[uint8]}, nil
	case []uint16:
		return ordered[uint16]{v, uintText[uint16]}, nil
	case []uint32:
		return ordered[uint32]{v, uintText[uint32]}, nil
	case []uint64:
		return ordered[uint64]{v, uintText[uint64]}, nil
	case []float32:
		return ordered[float32]{v, floatText[float32]}, nil
	case []float64:
		return ordered[float64]{v, floatText[float64]}, nil
	case []tensor.Float16:
		return ordered[float32]{widenHalf(v), floatText[float32]}, nil
	case []tensor.BFloat16:
		return ordered[float32]{widenHalf(v), floatText[float32]}, nil
	}
	return nil, fmt.Errorf("output %q holds %s; classification needs a numeric output", t.Name, t.Datatype)
}

func widenHalf[H interface{ Float32() float32 }](v []H) []float32 {
	out := make([]float32, len(v))
	for i, h := range v {
		out[i] = h.Float32()
	}
	return out
}

// classifier is the classifier fixture: OUTPUT0 is INPUT0 (FP32 [-1, 4])
// unchanged, read as the scores of classes labelled a, b, c and d.
type classifier struct{ model.Model }

// classifierLabels are the classifier fixture's labels, by class index.
var classifierLabels = []string{"a", "b", "c", "d"}

func newClassifier() model.Model {
	id := model.NewIdentity(tensor.FP32)
	md := id.Metadata()
	md.Name = "classifier"
	md.Inputs = []oip.TensorMetadata{{Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{-1, 4}}}
	md.Outputs = []oip.TensorMetadata{{Name: "OUTPUT0", Datatype: tensor.FP32, Shape: []int64{-1, 4}}}
	return classifier{renamed{Model: id, md: md}}
}

func (classifier) Labels(output string) []string {
	if output == "OUTPUT0" {
		return classifierLabels
	}
	return nil
}
