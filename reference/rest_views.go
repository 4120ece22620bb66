package reference

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/oipkit/oipkit/internal/envswitch"
	"github.com/oipkit/oipkit/oip"
)

// EnvRESTViews turns off answering REST binary requests from their own
// memory (OIPKIT_REST_VIEWS=off): binary inputs are then copied out of the
// request body, and the answer's tensors copied after its JSON header into
// one buffer, as before issue 25. On, a large FP32 tensor is read into the
// body once and written back from there, as a TCP echo does.
const EnvRESTViews = "OIPKIT_REST_VIEWS"

var restViews = envswitch.On(EnvRESTViews)

// partsWriter is a ResponseWriter that sends a body given in parts in one
// write, copying none of them (http1Response; net/http's writers copy).
type partsWriter interface {
	WriteParts(first []byte, rest [][]byte) (int64, error)
}

// bodyPad is how many bytes to leave before a request body so that its
// binary part, after the JSON header of the length the request declares,
// starts 8-byte aligned (the buffer's start is): only then can numeric
// inputs be viewed in place (tensor.ViewRaw) rather than copied. A missing
// or malformed length pads nothing; the decoder reports it.
func bodyPad(h http.Header) int {
	v := h[oip.HeaderInferenceHeaderContentLength]
	if len(v) != 1 {
		return 0
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 0 {
		return 0
	}
	return (8 - n%8) % 8
}

// writeParts answers resp through pw: the JSON header encoded into a
// pooled buffer of about hint bytes, then the binary outputs from their own
// memory (the model's, or the request body's when the model answered with
// its inputs), all in one write.
func writeParts(w *statusWriter, pw partsWriter, hint int, resp *oip.InferResponse, req *oip.InferRequest, fail func(error)) {
	outBuf := getBufferFor(int64(hint))
	defer putBuffer(outBuf)
	var rawsBuf [4][]byte // no allocation for the usual few outputs
	header, raws, err := oip.AppendRESTResponseParts((*outBuf)[:0], rawsBuf[:0], resp, req.BinaryOutput)
	if err != nil {
		fail(fmt.Errorf("encode response: %w", err))
		return
	}
	*outBuf = header[:0]
	h := w.Header()
	n := len(header)
	if raws != nil {
		h["Content-Type"] = contentTypeBinary
		h[oip.HeaderInferenceHeaderContentLength] = []string{strconv.Itoa(len(header))}
		for _, r := range raws {
			n += len(r)
		}
	} else {
		h["Content-Type"] = contentTypeJSON
	}
	if n > autoContentLength {
		h["Content-Length"] = []string{strconv.Itoa(n)}
	}
	w.WriteHeader(http.StatusOK)
	pw.WriteParts(header, raws)
}
