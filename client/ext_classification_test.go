package client_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/tensor"
)

type inferClient interface {
	Infer(ctx context.Context, req *oip.InferRequest) (*oip.InferResponse, error)
}

func TestClassification(t *testing.T) {
	srv := referencetest.Start(t)
	rest, err := client.NewREST(srv.HTTPURL(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rest.Close()
	grpc, err := client.NewGRPC(srv.GRPCAddr(), true, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer grpc.Close()
	want := []client.Class{{Value: 3.3, Index: 1, Label: "b"}, {Value: 2.4, Index: 3, Label: "d"}}
	for name, c := range map[string]inferClient{"rest": rest, "grpc": grpc} {
		t.Run(name, func(t *testing.T) {
			in := tensor.Tensor{Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{1, 4}, Data: []float32{1.1, 3.3, 0.5, 2.4}}
			resp, err := c.Infer(context.Background(), &oip.InferRequest{Model: "classifier",
				Inputs: []oip.InferInput{{Tensor: in}}, Outputs: []oip.RequestedOutput{client.ClassifiedOutput("OUTPUT0", 2)}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := client.ParseClasses(resp.Outputs[0].Tensor)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("classes %+v, want %+v", got, want)
			}
		})
	}
	for _, bad := range []string{"x", "1.0", "1.0:-2", ":3", "nan:z"} {
		if _, err := client.ParseClasses(tensor.Tensor{Name: "OUTPUT0", Datatype: tensor.Bytes, Shape: []int64{1}, Data: [][]byte{[]byte(bad)}}); err == nil {
			t.Errorf("ParseClasses(%q) succeeded", bad)
		}
	}
}
