package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/tensor"
)

// End-to-end: every protocol against the reference server on loopback.

func referenceClients(t *testing.T) map[client.Protocol]client.Client {
	t.Helper()
	srv := referencetest.Start(t)
	clients := map[client.Protocol]client.Client{}
	for _, p := range client.Protocols {
		target := srv.HTTPURL()
		if p.IsGRPC() {
			target = srv.GRPCAddr()
		}
		c, err := client.New(target, p, client.Options{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		t.Cleanup(func() { c.Close() })
		clients[p] = c
	}
	return clients
}

func TestE2EHealthAndMetadata(t *testing.T) {
	ctx := context.Background()
	for p, c := range referenceClients(t) {
		t.Run(string(p), func(t *testing.T) {
			if live, err := c.ServerLive(ctx); err != nil || !live {
				t.Errorf("ServerLive = %v, %v", live, err)
			}
			if ready, err := c.ServerReady(ctx); err != nil || !ready {
				t.Errorf("ServerReady = %v, %v", ready, err)
			}
			if ready, err := c.ModelReady(ctx, "versioned", "2"); err != nil || !ready {
				t.Errorf("ModelReady(versioned, 2) = %v, %v", ready, err)
			}
			sm, err := c.ServerMetadata(ctx)
			if err != nil || sm.Name == "" || sm.Version == "" {
				t.Errorf("ServerMetadata = %+v, %v", sm, err)
			}
			mm, err := c.ModelMetadata(ctx, "add_sub", "")
			if err != nil {
				t.Fatal(err)
			}
			if mm.Name != "add_sub" || len(mm.Inputs) != 2 || mm.Inputs[0].Datatype != tensor.Int32 ||
				!slices.Equal(mm.Inputs[0].Shape, []int64{-1, 16}) {
				t.Errorf("ModelMetadata = %+v", mm)
			}

			// Unknown models: a 4xx with {"error": ...}, or NOT_FOUND.
			ready, err := c.ModelReady(ctx, "does_not_exist", "")
			if ready {
				t.Error("an unknown model is ready")
			}
			if err != nil { // gRPC may answer OK with ready=false
				checkUnknownModel(t, p, err)
			}
			_, err = c.ModelMetadata(ctx, "does_not_exist", "")
			checkUnknownModel(t, p, err)
			_, err = c.Infer(ctx, addSubRequest(t, "does_not_exist"))
			checkUnknownModel(t, p, err)
		})
	}
}

func checkUnknownModel(t *testing.T, p client.Protocol, err error) {
	t.Helper()
	e := asError(t, err)
	if e.Message == "" {
		t.Errorf("%s: no error message in %+v", e.Op, e)
	}
	if p.IsGRPC() {
		if e.GRPCCode != codes.NotFound && e.GRPCCode != codes.InvalidArgument {
			t.Errorf("%s: gRPC %v, want NOT_FOUND or INVALID_ARGUMENT", e.Op, e.GRPCCode)
		}
		return
	}
	if e.HTTPStatus != http.StatusNotFound && e.HTTPStatus != http.StatusBadRequest {
		t.Errorf("%s: HTTP %d, want 400 or 404 (%s)", e.Op, e.HTTPStatus, e.Body)
	}
}

func addSubRequest(t *testing.T, model string) *oip.InferRequest {
	t.Helper()
	x := make([]int32, 32)
	y := make([]int32, 32)
	for i := range 16 {
		x[i], y[i] = int32(i), 1
		x[16+i], y[16+i] = math.MaxInt32-int32(i), -int32(i) // second row wraps around
	}
	a, err := tensor.New("INPUT0", tensor.Int32, []int64{2, 16}, x)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tensor.New("INPUT1", tensor.Int32, []int64{2, 16}, y)
	if err != nil {
		t.Fatal(err)
	}
	return &oip.InferRequest{Model: model, ID: "e2e-é-✓", Inputs: []oip.InferInput{{Tensor: a}, {Tensor: b}}}
}

func TestE2EAddSub(t *testing.T) {
	ctx := context.Background()
	for p, c := range referenceClients(t) {
		t.Run(string(p), func(t *testing.T) {
			req := addSubRequest(t, "add_sub")
			resp, err := c.Infer(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Model != "add_sub" || resp.ID != req.ID || len(resp.Outputs) != 2 {
				t.Errorf("response %+v", resp)
			}
			x := req.Inputs[0].Data.([]int32)
			y := req.Inputs[1].Data.([]int32)
			for name, op := range map[string]func(a, b int32) int32{
				"OUTPUT0": func(a, b int32) int32 { return a + b },
				"OUTPUT1": func(a, b int32) int32 { return a - b },
			} {
				out, ok := resp.Output(name)
				if !ok {
					t.Fatalf("no %s", name)
				}
				got, ok := out.Data.([]int32)
				if !ok || out.Datatype != tensor.Int32 || !slices.Equal(out.Shape, []int64{2, 16}) {
					t.Fatalf("%s = %+v", name, out.Tensor)
				}
				for i := range x {
					if want := op(x[i], y[i]); got[i] != want {
						t.Errorf("%s[%d] = %d, want %d", name, i, got[i], want)
					}
				}
			}

			// Only the requested output comes back.
			req.Outputs = []oip.RequestedOutput{{Name: "OUTPUT1"}}
			resp, err = c.Infer(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Outputs) != 1 || resp.Outputs[0].Name != "OUTPUT1" {
				t.Errorf("requested OUTPUT1, got %d outputs", len(resp.Outputs))
			}

			// Versions select the model version.
			in, _ := tensor.New("INPUT0", tensor.Int32, []int64{3}, []int32{10, 20, 30})
			resp, err = c.Infer(ctx, &oip.InferRequest{Model: "versioned", Version: "2", Inputs: []oip.InferInput{{Tensor: in}}})
			if err != nil {
				t.Fatal(err)
			}
			if out, _ := resp.Output("OUTPUT0"); !reflect.DeepEqual(out.Data, []int32{12, 22, 32}) || resp.Version != "2" {
				t.Errorf("versioned v2: version %q, OUTPUT0 %v", resp.Version, out.Data)
			}
		})
	}
}

// identityData returns six awkward but JSON-safe values of d; binary adds
// values only the binary forms carry exactly.
func identityData(d tensor.Datatype, binary bool) any {
	f16 := func(fs ...float32) []tensor.Float16 {
		var v []tensor.Float16
		for _, f := range fs {
			v = append(v, tensor.Float16FromFloat32(f))
		}
		return v
	}
	bf16 := func(fs ...float32) []tensor.BFloat16 {
		var v []tensor.BFloat16
		for _, f := range fs {
			v = append(v, tensor.BFloat16FromFloat32(f))
		}
		return v
	}
	switch d {
	case tensor.Bool:
		return []bool{true, false, true, true, false, false}
	case tensor.Uint8:
		return []uint8{0, 1, 127, 128, 254, 255}
	case tensor.Uint16:
		return []uint16{0, 1, 255, 256, 65534, 65535}
	case tensor.Uint32:
		return []uint32{0, 1, 1 << 16, 1<<31 + 1, math.MaxUint32 - 1, math.MaxUint32}
	case tensor.Uint64:
		return []uint64{0, 1, 1<<53 + 1, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}
	case tensor.Int8:
		return []int8{math.MinInt8, -1, 0, 1, 100, math.MaxInt8}
	case tensor.Int16:
		return []int16{math.MinInt16, -1, 0, 1, 1000, math.MaxInt16}
	case tensor.Int32:
		return []int32{math.MinInt32, -1, 0, 1, 1 << 30, math.MaxInt32}
	case tensor.Int64:
		return []int64{math.MinInt64, -(1<<53 + 1), 0, 1, 1<<53 + 1, math.MaxInt64}
	case tensor.FP16:
		return f16(1, -2, 0.5, 65504, 1.0/16384, 3.140625)
	case tensor.BF16:
		return bf16(1, -2, 0.5, 3.3895314e38, 1.1754944e-38, 3.140625)
	case tensor.FP32:
		return []float32{1.5, -math.MaxFloat32, math.SmallestNonzeroFloat32, 0.1, 1 << 24, 3.4e-30}
	case tensor.FP64:
		return []float64{1.5, -math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, 1<<53 + 1, 1e300}
	case tensor.Bytes:
		v := [][]byte{[]byte("a"), {}, []byte("héllo"), []byte("✓✓"), []byte(`"quoted" \ back`), []byte("\t\n")}
		if binary {
			v[1] = []byte("\x00\xff\xfe") // not UTF-8
		}
		return v
	}
	return nil
}

func TestE2EIdentity(t *testing.T) {
	ctx := context.Background()
	for p, c := range referenceClients(t) {
		for _, d := range tensor.Datatypes {
			t.Run(fmt.Sprintf("%s/%s", p, d), func(t *testing.T) {
				data := identityData(d, p != client.ProtocolHTTP)
				n := int64(reflect.ValueOf(data).Len())
				shape := []int64{2, n / 2}
				if n%2 != 0 {
					shape = []int64{1, n}
				}
				in, err := tensor.New("INPUT0", d, shape, data)
				if err != nil {
					t.Fatal(err)
				}
				model := "identity_" + d.Lower()
				resp, err := c.Infer(ctx, &oip.InferRequest{Model: model, Inputs: []oip.InferInput{{Tensor: in}}})
				if err != nil {
					var e *client.Error
					// 16-bit floats in JSON are "problematic" (spec §5 A-06):
					// a server may refuse them with a 4xx.
					if p == client.ProtocolHTTP && (d == tensor.FP16 || d == tensor.BF16) &&
						errors.As(err, &e) && e.HTTPStatus >= 400 && e.HTTPStatus < 500 {
						t.Skipf("the reference server refuses %s in JSON: %v", d, err)
					}
					t.Fatal(err)
				}
				if resp.Model != model {
					t.Errorf("model_name %q", resp.Model)
				}
				out, ok := resp.Output("OUTPUT0")
				if !ok {
					t.Fatalf("no OUTPUT0 in %+v", resp)
				}
				if out.Datatype != d || !slices.Equal(out.Shape, shape) {
					t.Errorf("OUTPUT0 is %s %v, want %s %v", out.Datatype, out.Shape, d, shape)
				}
				if !reflect.DeepEqual(out.Data, data) {
					t.Errorf("OUTPUT0 = %#v, want %#v", out.Data, data)
				}
			})
		}
	}
}

// TestE2EPostInfer drives the load generator's path: a body encoded once,
// posted several times, decoded with DecodeInferResponse.
func TestE2EPostInfer(t *testing.T) {
	srv := referencetest.Start(t, func(cfg *reference.Config) { cfg.GRPCAddr = "" })
	c, err := client.NewREST(srv.HTTPURL(), true, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := addSubRequest(t, "add_sub")
	body, headerLen, err := oip.EncodeRESTRequest(req, oip.RESTEncoding{BinaryInputs: true, BinaryOutputs: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		raw, err := c.PostInfer(context.Background(), "add_sub", "1", body, headerLen)
		if err != nil {
			t.Fatal(err)
		}
		if raw.Header.Get(oip.HeaderInferenceHeaderContentLength) == "" {
			t.Errorf("binary outputs came back without %s", oip.HeaderInferenceHeaderContentLength)
		}
		resp, err := client.DecodeInferResponse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if out, _ := resp.Output("OUTPUT0"); out.Data.([]int32)[5] != 6 {
			t.Errorf("OUTPUT0 = %v", out.Data)
		}
	}
}
