package reference

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// viewsCase is one identity request with binary inputs: its raw input and
// the encoding asked for.
type viewsCase struct {
	d   tensor.Datatype
	id  string // its length moves the binary part across every alignment
	raw []byte
	enc oip.RESTEncoding
}

// identityRoundTrip posts c to the identity model of its datatype and
// returns an error unless OUTPUT0's raw bytes are the input's.
func identityRoundTrip(client *http.Client, base string, c viewsCase) error {
	n := len(c.raw) / c.d.Size()
	in, err := tensor.DecodeRaw("INPUT0", c.d, []int64{1, int64(n)}, c.raw)
	if err != nil {
		return err
	}
	req := &oip.InferRequest{ID: c.id, Inputs: []oip.InferInput{{Tensor: in}}}
	body, hl, err := oip.EncodeRESTRequest(req, c.enc)
	if err != nil {
		return err
	}
	hr, err := http.NewRequest(http.MethodPost, base+"/v2/models/identity_"+c.d.Lower()+"/infer", bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(hl))
	r, err := client.Do(hr)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	answer, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", r.StatusCode, answer)
	}
	rhl := -1
	if h := r.Header.Get(oip.HeaderInferenceHeaderContentLength); h != "" {
		if rhl, err = strconv.Atoi(h); err != nil {
			return err
		}
	}
	if (rhl >= 0) != c.enc.BinaryOutputs {
		return fmt.Errorf("binary answer %v, asked %v", rhl >= 0, c.enc.BinaryOutputs)
	}
	resp, err := oip.DecodeRESTResponse(answer, rhl)
	if err != nil {
		return err
	}
	if len(resp.Outputs) != 1 {
		return fmt.Errorf("%d outputs", len(resp.Outputs))
	}
	got, err := tensor.EncodeRaw(resp.Outputs[0].Tensor)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, c.raw) {
		return fmt.Errorf("OUTPUT0 differs from INPUT0 (%d bytes, %d back)", len(c.raw), len(got))
	}
	return nil
}

// randomRaw is n elements of datatype d (fixed-size, not BOOL) as random
// raw bytes: every bit pattern, NaNs among them, must come back as sent.
func randomRaw(rng *rand.Rand, d tensor.Datatype, n int) []byte {
	b := make([]byte, n*d.Size())
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// finite clears each element's top byte (little-endian, its sign and
// high exponent bits): floats are then finite, which JSON carries exactly,
// where a NaN's payload it does not.
func finite(raw []byte, size int) {
	for i := size - 1; i < len(raw); i += size {
		raw[i] = 0
	}
}

// TestRESTViews answers identity requests with binary inputs with the
// views on and off (EnvRESTViews), over the server's own HTTP/1.1 path
// (answers written in parts) and over net/http (copied): every fixed-size
// datatype, header lengths of every remainder mod 8 (so the binary part is
// aligned for viewing or not), answers below and above autoContentLength,
// binary and JSON. Each answer must be its input, bit for bit.
func TestRESTViews(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, views := range []bool{true, false} {
		for _, netHTTP := range []bool{false, true} {
			t.Run(fmt.Sprintf("views=%v/net-http=%v", views, netHTTP), func(t *testing.T) {
				defer func(was bool) { restViews = was }(restViews)
				restViews = views
				base := h1Start(t, Config{}, netHTTP).HTTPURL()
				client := &http.Client{}
				for _, d := range tensor.Datatypes {
					if d == tensor.Bytes || d == tensor.Bool {
						continue
					}
					for pad := range 8 {
						for _, n := range []int{3, 4096} {
							for _, enc := range []oip.RESTEncoding{{BinaryInputs: true, BinaryOutputs: true}, {BinaryInputs: true}} {
								raw := randomRaw(rng, d, n)
								if !enc.BinaryOutputs {
									finite(raw, d.Size())
								}
								c := viewsCase{d: d, id: strings.Repeat("x", pad), raw: raw, enc: enc}
								if err := identityRoundTrip(client, base, c); err != nil {
									t.Errorf("%s, %d elements, id %q, %+v: %v", d, n, c.id, enc, err)
								}
							}
						}
					}
				}
			})
		}
	}
}

// TestRESTViewsConcurrent sends distinct large tensors from several
// connections at once: an answer written from a request body that went
// back to its pool too early, and was read into by another request, would
// come back as someone else's tensor (and the race detector would see it).
// Sizes span the small pool and the large ones (2 MiB).
func TestRESTViewsConcurrent(t *testing.T) {
	base := h1Start(t, Config{}, false).HTTPURL()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			client := &http.Client{}
			for i := range 8 {
				n := []int{1 << 14, 1 << 19}[i%2]
				c := viewsCase{d: tensor.FP32, id: strings.Repeat("y", i), raw: randomRaw(rng, tensor.FP32, n),
					enc: oip.RESTEncoding{BinaryInputs: true, BinaryOutputs: true}}
				if err := identityRoundTrip(client, base, c); err != nil {
					t.Errorf("connection %d, request %d (%d FP32): %v", g, i, n, err)
				}
			}
		})
	}
	wg.Wait()
}
