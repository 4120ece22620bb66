package oip

import (
	"encoding/binary"
	"unsafe"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// ToProtoResponseReusing is ToProtoResponse for a server that answers from
// a decoded request's raw_input_contents (reuse): a BYTES output in raw form
// whose elements are views of one entry of reuse, laid out in it exactly as
// their framing, is answered with that entry itself instead of a new
// encoding (an identity model's answer: a megabyte not copied; issue 25).
// The message then aliases reuse, which must not change until it is
// marshalled. Any other output is encoded as ToProtoResponse encodes it.
func ToProtoResponseReusing(resp *InferResponse, raw bool, reuse [][]byte) (*inferencepb.ModelInferResponse, error) {
	return toProtoResponse(resp, raw, reuse)
}

// framedRaw returns the entry of reuse that is exactly the raw encoding of
// v, each element a view of its own bytes in place, or nil when there is
// none. Checking costs one comparison per element, not per byte: an element
// viewing the bytes after its own length prefix holds those bytes.
func framedRaw(v [][]byte, reuse [][]byte) []byte {
	for _, r := range reuse {
		if framedIn(v, r) {
			return r
		}
	}
	return nil
}

func framedIn(v [][]byte, raw []byte) bool {
	if len(v) == 0 || len(raw) == 0 {
		return false // nothing to save; the general path encodes it
	}
	off := 0
	for _, e := range v {
		if len(raw)-off < 4 {
			return false
		}
		n := binary.LittleEndian.Uint32(raw[off:])
		off += 4
		if uint64(n) != uint64(len(e)) || len(e) > len(raw)-off {
			return false
		}
		if len(e) > 0 && unsafe.SliceData(e) != &raw[off] {
			return false
		}
		off += len(e)
	}
	return off == len(raw)
}
