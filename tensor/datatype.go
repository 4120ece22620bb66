package tensor

import "fmt"

// Datatype is an OIP tensor datatype name such as "INT32". Names are
// case-sensitive, as the KServe v2 text requires.
type Datatype string

// The OIP datatypes. BF16 appears in the KServe v2 table and the protos but
// not in the OIP markdown tables.
const (
	Bool   Datatype = "BOOL"
	Uint8  Datatype = "UINT8"
	Uint16 Datatype = "UINT16"
	Uint32 Datatype = "UINT32"
	Uint64 Datatype = "UINT64"
	Int8   Datatype = "INT8"
	Int16  Datatype = "INT16"
	Int32  Datatype = "INT32"
	Int64  Datatype = "INT64"
	FP16   Datatype = "FP16"
	BF16   Datatype = "BF16"
	FP32   Datatype = "FP32"
	FP64   Datatype = "FP64"
	Bytes  Datatype = "BYTES"
)

// Datatypes lists every datatype in a stable order.
var Datatypes = []Datatype{Bool, Uint8, Uint16, Uint32, Uint64, Int8, Int16, Int32, Int64, FP16, BF16, FP32, FP64, Bytes}

// Valid reports whether d is a known OIP datatype.
func (d Datatype) Valid() bool { return d.Size() >= 0 }

// Size is the size of one element in bytes: 0 for BYTES (variable) and -1 for
// an unknown datatype.
func (d Datatype) Size() int {
	switch d {
	case Bool, Uint8, Int8:
		return 1
	case Uint16, Int16, FP16, BF16:
		return 2
	case Uint32, Int32, FP32:
		return 4
	case Uint64, Int64, FP64:
		return 8
	case Bytes:
		return 0
	}
	return -1
}

// ParseDatatype returns the datatype named s, or an error for an unknown name.
func ParseDatatype(s string) (Datatype, error) {
	d := Datatype(s)
	if !d.Valid() {
		return "", fmt.Errorf("unknown datatype %q", s)
	}
	return d, nil
}

// Lower is the lower-case datatype name, as used in fixture names
// (identity_fp32).
func (d Datatype) Lower() string {
	b := []byte(d)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
