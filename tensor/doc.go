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
// contents. They have no typed gRPC contents field at all.
//
// JSON choices where the spec is silent:
//
//   - NaN and ±Inf, which JSON cannot express, are written and read as the
//     strings "NaN", "Infinity" and "-Infinity" (the names MLServer and
//     Python use). Other strings are errors for numeric types.
//   - Integers are exact at every width, including INT64/UINT64 beyond 2^53.
//     An integral number written with a fraction or exponent (2.0, 1e2) is
//     coerced, as the spec allows; fractional or out-of-range values are
//     errors rather than silently truncated as Triton does.
//   - FP32 and FP64 accept any JSON number; a finite number too large for the
//     type is an error rather than becoming Inf.
//   - BYTES elements are JSON strings holding valid UTF-8. Output escapes like
//     encoding/json and replaces invalid UTF-8 with U+FFFD, so non-UTF-8
//     BYTES need the binary data extension or gRPC.
//   - Nested and flat input are equivalent; only the total element count is
//     checked (ragged nesting with the right count is accepted, as in
//     Triton). Output is always flat.
package tensor
