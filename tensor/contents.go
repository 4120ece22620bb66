package tensor

import "github.com/oipkit/oipkit/specs/inferencepb"

// ToContents converts t to gRPC typed contents. FP16 and BF16 have no typed
// field and return an error: they must travel as raw contents.
func ToContents(t Tensor) (*inferencepb.InferTensorContents, error) {
	panic("TODO")
}

// FromContents converts gRPC typed contents into a tensor of datatype d and
// concrete shape. Only the field matching d may be set (INT8/INT16/INT32 in
// int_contents, UINT8/UINT16/UINT32 in uint_contents, ...), values must fit
// the datatype's range, and the count must equal the shape's element count.
func FromContents(name string, d Datatype, shape []int64, c *inferencepb.InferTensorContents) (Tensor, error) {
	panic("TODO")
}
