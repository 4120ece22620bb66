package oip

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/oipkit/oipkit/tensor"
)

func framedBytes(elems ...string) []byte {
	var b []byte
	for _, e := range elems {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

func bytesAnswer(t *testing.T, v [][]byte, shape []int64, reuse [][]byte) []byte {
	t.Helper()
	resp := &InferResponse{Model: "m", Outputs: []InferOutput{{Tensor: tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.Bytes, Shape: shape, Data: v}}}}
	pb, err := ToProtoResponseReusing(resp, true, reuse)
	if err != nil {
		t.Fatal(err)
	}
	return pb.GetRawOutputContents()[0]
}

// TestToProtoResponseReusing: a BYTES output viewing a raw input in place is
// answered with that input; one that only has the same bytes, or whose
// elements were changed after decoding, is encoded anew.
func TestToProtoResponseReusing(t *testing.T) {
	raw := framedBytes("ab", "", "cde")
	in, err := tensor.ViewRaw("INPUT0", tensor.Bytes, []int64{3}, raw)
	if err != nil {
		t.Fatal(err)
	}
	v := in.Data.([][]byte)
	other := framedBytes("zz")
	if got := bytesAnswer(t, v, []int64{3}, [][]byte{other, raw}); unsafe.SliceData(got) != unsafe.SliceData(raw) {
		t.Errorf("views of raw: answer %q is not raw itself", got)
	}
	copied := [][]byte{[]byte("ab"), {}, []byte("cde")}
	if got := bytesAnswer(t, copied, []int64{3}, [][]byte{raw}); unsafe.SliceData(got) == unsafe.SliceData(raw) || !bytes.Equal(got, raw) {
		t.Errorf("copies: answer %q reuses raw or differs from it", got)
	}
	// Elements 0 and 2 swapped: each still views raw, not in framing order.
	swapped := [][]byte{v[2], v[1], v[0]}
	if got := bytesAnswer(t, swapped, []int64{3}, [][]byte{raw}); !bytes.Equal(got, framedBytes("cde", "", "ab")) {
		t.Errorf("swapped: answer %q", got)
	}
	// A prefix: the first two elements only.
	if got := bytesAnswer(t, v[:2], []int64{2}, [][]byte{raw}); !bytes.Equal(got, framedBytes("ab", "")) {
		t.Errorf("prefix: answer %q", got)
	}
	// Shortened in place: views raw, but is no longer its framing.
	short := [][]byte{v[0][:1], v[1], v[2]}
	if got := bytesAnswer(t, short, []int64{3}, [][]byte{raw}); !bytes.Equal(got, framedBytes("a", "", "cde")) {
		t.Errorf("shortened: answer %q", got)
	}
}

// FuzzToProtoResponseReusing decodes raw BYTES contents as the server does
// and answers them back, reusing raw, against the general path's encoding
// (tensor.EncodeRaw of a deep copy) as the oracle; drop removes element
// drop%n first, so that the answer views raw but is not its framing.
func FuzzToProtoResponseReusing(f *testing.F) {
	f.Add(framedBytes("ab", "", "cde"), uint8(3), uint8(0))
	f.Add(framedBytes("", ""), uint8(2), uint8(1))
	f.Add(framedBytes("x"), uint8(1), uint8(7))
	f.Fuzz(func(t *testing.T, raw []byte, n, drop uint8) {
		in, err := tensor.ViewRaw("INPUT0", tensor.Bytes, []int64{int64(n)}, raw)
		if err != nil {
			return
		}
		v := in.Data.([][]byte)
		if drop != 0 && len(v) > 0 {
			i := int(drop) % len(v)
			v = append(v[:i:i], v[i+1:]...)
		}
		deep := make([][]byte, len(v))
		for i, e := range v {
			deep[i] = bytes.Clone(e)
		}
		want, err := tensor.EncodeRaw(tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.Bytes, Shape: []int64{int64(len(v))}, Data: deep})
		if err != nil {
			t.Fatal(err)
		}
		got := bytesAnswer(t, v, []int64{int64(len(v))}, [][]byte{raw})
		if !bytes.Equal(got, want) {
			t.Fatalf("answer %x, want %x", got, want)
		}
		if drop == 0 && len(v) > 0 && unsafe.SliceData(got) != unsafe.SliceData(raw) {
			t.Fatalf("the unchanged decoding of %x was encoded anew", raw)
		}
	})
}
