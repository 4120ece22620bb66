package client

import (
	"context"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Calls of the statistics extension. An empty model asks for every model,
// an empty version for every version of the model.

// ModelStatistics fetches GET /v2/models[/{m}[/versions/{v}]]/stats.
func (c *REST) ModelStatistics(ctx context.Context, model, version string) (*oip.StatisticsResponse, error) {
	const op = "ModelStatistics"
	path := "/v2/models/stats"
	if model != "" {
		path = modelPath(model, version) + "/stats"
	}
	raw, err := c.get(ctx, op, path)
	return jsonAnswer[oip.StatisticsResponse](op, "statistics", raw, err)
}

// ModelStatistics calls ModelStatistics.
func (c *GRPC) ModelStatistics(ctx context.Context, model, version string) (*oip.StatisticsResponse, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.ModelStatistics(ctx, &inferencepb.ModelStatisticsRequest{Name: model, Version: version})
	if err != nil {
		return nil, callError(ctx, "ModelStatistics", err)
	}
	return oip.StatisticsFromProto(r), nil
}
