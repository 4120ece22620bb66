package reference_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/oipkit/oipkit/internal/tlstest"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/tensor"
)

// TestInferContentLength: every inference answer declares its length and
// none is chunked, over HTTP/1.1 and HTTP/2, whether the body is small (net/http
// measures it itself) or larger than net/http's buffer (the handler
// declares it).
func TestInferContentLength(t *testing.T) {
	pki := tlstest.New(t)
	plain := startWith(t, nil)
	secure := startWith(t, nil, func(c *reference.Config) { c.TLS = pki.ServerConfig(t, false) })
	big := make([]int32, 1000)
	for i := range big {
		big[i] = int32(1000 + i)
	}
	bigInput := []oip.InferInput{{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1, 1000}, Data: big}}}
	requests := []struct {
		name, model string
		inputs      []oip.InferInput
		binary      bool
		large       bool // the answer is larger than net/http's 2 KiB buffer
	}{
		{"add_sub JSON", "add_sub", addSubRequest().Inputs, false, false},
		{"add_sub binary", "add_sub", addSubRequest().Inputs, true, false},
		{"identity JSON", "identity_int32", bigInput, false, true},
		{"identity binary", "identity_int32", bigInput, true, true},
	}
	for _, c := range []struct {
		name   string
		base   string
		client *http.Client
		major  int
	}{
		{"HTTP/1.1", plain.HTTPURL(), &http.Client{}, 1},
		{"HTTP/2", secure.HTTPURL(), &http.Client{Transport: &http.Transport{TLSClientConfig: pki.ClientConfig(t, false), ForceAttemptHTTP2: true}}, 2},
	} {
		for _, r := range requests {
			body, hl, err := oip.EncodeRESTRequest(&oip.InferRequest{Inputs: r.inputs}, oip.RESTEncoding{BinaryInputs: r.binary, BinaryOutputs: r.binary})
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(http.MethodPost, c.base+"/v2/models/"+r.model+"/infer", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if hl >= 0 {
				req.Header.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(hl))
			}
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, r.name, err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s: HTTP %d %s, %v", c.name, r.name, resp.StatusCode, b, err)
			}
			if resp.ProtoMajor != c.major {
				t.Fatalf("%s %s: answered over %s", c.name, r.name, resp.Proto)
			}
			if (len(b) > 2048) != r.large {
				t.Fatalf("%s %s: a %d-byte answer does not test what it should", c.name, r.name, len(b))
			}
			if resp.ContentLength != int64(len(b)) || len(resp.TransferEncoding) != 0 {
				t.Errorf("%s %s: Content-Length %d, Transfer-Encoding %q for a %d-byte body", c.name, r.name, resp.ContentLength, resp.TransferEncoding, len(b))
			}
			if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(b)) {
				t.Errorf("%s %s: Content-Length header %q, want %d", c.name, r.name, got, len(b))
			}
		}
	}
}
