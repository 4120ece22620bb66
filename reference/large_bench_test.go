package reference

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// identityHandler returns a function that serves one identity_fp32 REST
// binary request of n elements through the REST handler, in process, and
// checks the answer's length.
func identityHandler(t testing.TB, n int) func() {
	s, err := New(Config{HTTPAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i)
	}
	in := []oip.InferInput{{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{1, int64(n)}, Data: data}}}
	body, hl, err := oip.EncodeRESTRequest(&oip.InferRequest{Inputs: in}, oip.RESTEncoding{BinaryInputs: true, BinaryOutputs: true})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/v2/models/identity_fp32/infer", nil)
	r.Header.Set("Content-Type", "application/octet-stream")
	r.Header.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(hl))
	r.ContentLength = int64(len(body))
	rb := new(replay)
	r.Body = rb
	w := &recorder{h: http.Header{}}
	return func() {
		rb.Reset(body)
		clear(w.h)
		w.status = 0
		w.body.Reset()
		s.serveHTTP(w, r)
		if w.status != http.StatusOK || w.body.Len() < 4*n {
			t.Fatalf("HTTP %d, %d bytes: %.200s", w.status, w.body.Len(), w.body.Bytes())
		}
	}
}

// BenchmarkIdentityBinaryHandler is the server's own work on a large REST
// binary tensor (1 MiB and 16 MiB FP32), without the network: the body
// read, the decode, the model's copy and the response encoding.
func BenchmarkIdentityBinaryHandler(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
	}{{"1MiB", 1 << 18}, {"16MiB", 1 << 22}} {
		b.Run(c.name, func(b *testing.B) {
			serve := identityHandler(b, c.n)
			b.SetBytes(int64(4 * c.n))
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}

// Allocations per identity_fp32 REST binary request, measured then rounded
// up: 21-24 at 1 MiB and 27-28 at 16 MiB (the decoded input and the model's
// copy among them; at 16 MiB they start a garbage collection every few
// requests, which empties the buffer pools now and then). The body buffer
// comes from the size-classed pools and the response's tensor is written
// from the model's output, so the count does not grow with the body:
// growing a 16 MiB body's buffer as it arrived made 44.
const maxIdentityBinaryAllocs = 32

func TestIdentityBinaryAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, n := range []int{1 << 18, 1 << 22} {
		serve := identityHandler(t, n)
		serve()
		if got := testing.AllocsPerRun(20, serve); got > maxIdentityBinaryAllocs {
			t.Errorf("%d FP32 elements over REST binary: %.0f allocations per request, want at most %d", n, got, maxIdentityBinaryAllocs)
		}
	}
}
