package tensor

// JSON "data" arrays of the REST protocol. See the package documentation for
// how each datatype is written.

// DecodeJSONData parses the JSON value of a REST "data" field (nested or
// flat arrays) into the Go slice type of d, checking that it holds exactly
// the element count of shape. Decoding stops with an error as soon as more
// elements than that count are seen, and allocates at most maxElements
// elements (maxElements <= 0 means no limit beyond the shape), so a hostile
// body cannot make it allocate without bound. Nesting deeper than
// MaxJSONDepth is an error.
func DecodeJSONData(d Datatype, shape []int64, data []byte, maxElements int64) (any, error) {
	panic("TODO")
}

// AppendJSONData appends t's elements to dst as a flat JSON array.
func AppendJSONData(dst []byte, t Tensor) ([]byte, error) {
	panic("TODO")
}

// MaxJSONDepth is the deepest array nesting DecodeJSONData accepts.
const MaxJSONDepth = 64
