package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/tensor"
)

// statisticsClient is what both transports offer.
type statisticsClient interface {
	ModelStatistics(ctx context.Context, model, version string) (*oip.StatisticsResponse, error)
	Infer(ctx context.Context, req *oip.InferRequest) (*oip.InferResponse, error)
}

func TestModelStatistics(t *testing.T) {
	srv := referencetest.Start(t)
	rest, err := client.NewREST(srv.HTTPURL(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rest.Close()
	grpc, err := client.NewGRPC(srv.GRPCAddr(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer grpc.Close()
	ctx := context.Background()
	for name, c := range map[string]statisticsClient{"rest": rest, "grpc": grpc} {
		t.Run(name, func(t *testing.T) {
			before := versionCount(t, c, "versioned", "2")
			in := tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{2}, Data: []int32{1, 2}}
			if _, err := c.Infer(ctx, &oip.InferRequest{Model: "versioned", Version: "2", Inputs: []oip.InferInput{{Tensor: in}}}); err != nil {
				t.Fatal(err)
			}
			if after := versionCount(t, c, "versioned", "2"); after != before+1 {
				t.Errorf("inference_count of versioned/2: %d, then %d after one inference", before, after)
			}
			all, err := c.ModelStatistics(ctx, "", "")
			if err != nil || len(all.ModelStats) < 3 {
				t.Fatalf("all statistics: %+v, %v", all, err)
			}
			model, err := c.ModelStatistics(ctx, "versioned", "")
			if err != nil || len(model.ModelStats) != 2 {
				t.Fatalf("statistics of versioned: %+v, %v; want its two versions", model, err)
			}
			_, err = c.ModelStatistics(ctx, "does_not_exist", "")
			var e *client.Error
			if !errors.As(err, &e) || e.HTTPStatus != http.StatusNotFound && e.GRPCCode != codes.NotFound {
				t.Errorf("statistics of an unknown model: %v, want not found", err)
			}
		})
	}
}

func versionCount(t *testing.T, c statisticsClient, model, version string) uint64 {
	t.Helper()
	r, err := c.ModelStatistics(context.Background(), model, version)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ModelStats) != 1 || r.ModelStats[0].Name != model || r.ModelStats[0].Version != version {
		t.Fatalf("statistics of %s/%s: %+v", model, version, r.ModelStats)
	}
	return r.ModelStats[0].InferenceCount
}
