// Package tensor holds oipkit's single tensor model — a name, an OIP datatype,
// a shape and the elements as a typed Go slice — and its encodings:
//
//   - raw little-endian bytes, as used by the REST binary-data extension and by
//     gRPC raw_input_contents / raw_output_contents (BYTES elements are a 4-byte
//     little-endian length followed by the bytes);
//   - JSON "data" arrays of the REST protocol (nested or flat on input, flat on
//     output);
//   - gRPC typed InferTensorContents.
//
// The reference server, the conformance suites and the load generator all use
// this package, so a tensor means the same thing everywhere.
//
// Element storage by datatype:
//
//	BOOL   []bool      UINT8  []uint8    UINT16 []uint16   UINT32 []uint32
//	UINT64 []uint64    INT8   []int8     INT16  []int16    INT32  []int32
//	INT64  []int64     FP16   []Float16  BF16   []BFloat16 FP32   []float32
//	FP64   []float64   BYTES  [][]byte
//
// FP16 and BF16 are kept as their IEEE bit patterns so round trips are
// bit-exact. In JSON they are written and read as ordinary numbers, converted
// with round-to-nearest-even; the OIP spec calls 16-bit floats in JSON
// "problematic" and servers differ (Triton rejects them, MLServer accepts them),
// so exact 16-bit transport should use the binary extension or gRPC raw
// contents.
package tensor
