package reference_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/oipkit/oipkit/oip"
)

// Benchmarks of one add_sub inference ([1,16] INT32 × 2) over real loopback
// transports, server and client in the same process, so allocations per
// operation include both sides.

func benchmarkGRPC(b *testing.B, raw bool) {
	srv := startWith(b, nil)
	c := dial(b, srv.GRPCAddr())
	pb, err := oip.ToProtoRequest(addSubRequest(), raw)
	if err != nil {
		b.Fatal(err)
	}
	ctx := ctxT(b)
	if _, err := c.ModelInfer(ctx, pb); err != nil { // warm the connection
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.ModelInfer(ctx, pb); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddSubGRPC uses typed contents (int_contents).
func BenchmarkAddSubGRPC(b *testing.B) { benchmarkGRPC(b, false) }

// BenchmarkAddSubGRPCRaw uses raw_input_contents.
func BenchmarkAddSubGRPCRaw(b *testing.B) { benchmarkGRPC(b, true) }

// BenchmarkAddSubREST posts a JSON body over a keep-alive connection.
func BenchmarkAddSubREST(b *testing.B) {
	srv := startWith(b, nil)
	body, _, err := oip.EncodeRESTRequest(addSubRequest(), oip.RESTEncoding{})
	if err != nil {
		b.Fatal(err)
	}
	url := srv.HTTPURL() + "/v2/models/add_sub/infer"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	post := func() {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	post()
	b.ReportAllocs()
	for b.Loop() {
		post()
	}
}
