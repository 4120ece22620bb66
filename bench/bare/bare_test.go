package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// benchRequest is the add_sub request of scripts/bench-compare.sh.
func benchRequest(t testing.TB) *oip.InferRequest {
	t.Helper()
	a, b := make([]int32, 16), make([]int32, 16)
	for i := range a {
		a[i], b[i] = int32(i+1), int32(i+101)
	}
	in0, err := tensor.New("INPUT0", tensor.Int32, []int64{1, 16}, a)
	if err != nil {
		t.Fatal(err)
	}
	in1, err := tensor.New("INPUT1", tensor.Int32, []int64{1, 16}, b)
	if err != nil {
		t.Fatal(err)
	}
	return &oip.InferRequest{Model: "add_sub", Inputs: []oip.InferInput{{Tensor: in0}, {Tensor: in1}}}
}

func post(t *testing.T, url string, body []byte, headerLen int) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v2/models/add_sub/infer", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if headerLen >= 0 {
		req.Header.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(headerLen))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
	}
	return resp, b
}

// TestSameBytes checks that the bare servers answer exactly what the
// reference server answers, so a benchmark of the two compares the servers'
// work, not the size of their answers.
func TestSameBytes(t *testing.T) {
	ref := referencetest.Start(t)
	req := benchRequest(t)
	jsonBody, _, err := oip.EncodeRESTRequest(req, oip.RESTEncoding{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAnswers(jsonBody)
	if err != nil {
		t.Fatal(err)
	}
	bare := httptest.NewServer(a)
	defer bare.Close()

	binBody, hl, err := oip.EncodeRESTRequest(req, oip.RESTEncoding{BinaryInputs: true, BinaryOutputs: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		body []byte
		hl   int
	}{{"json", jsonBody, -1}, {"binary", binBody, hl}} {
		refResp, want := post(t, ref.HTTPURL(), c.body, c.hl)
		bareResp, got := post(t, bare.URL, c.body, c.hl)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: bare answered\n%q\nthe reference\n%q", c.name, got, want)
		}
		for _, k := range []string{"Content-Type", "Content-Length", oip.HeaderInferenceHeaderContentLength} {
			if g, w := bareResp.Header.Values(k), refResp.Header.Values(k); !equal(g, w) {
				t.Errorf("%s: %s: bare %q, reference %q", c.name, k, g, w)
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(ref.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc := inferencepb.NewGRPCInferenceServiceClient(conn)
	g := &bareGRPC{a: a}
	for _, raw := range []bool{true, false} {
		pb, err := oip.ToProtoRequest(req, raw)
		if err != nil {
			t.Fatal(err)
		}
		want, err := rc.ModelInfer(ctx, pb)
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.ModelInfer(ctx, pb)
		if err != nil {
			t.Fatal(err)
		}
		wb, _ := proto.MarshalOptions{Deterministic: true}.Marshal(want)
		gb, _ := proto.MarshalOptions{Deterministic: true}.Marshal(got)
		if !bytes.Equal(gb, wb) {
			t.Errorf("gRPC raw=%v: bare answered %v, the reference %v", raw, got, want)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
