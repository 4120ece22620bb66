package oiptarget

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
)

// statisticsReader is a client of the statistics extension.
type statisticsReader interface {
	ModelStatistics(ctx context.Context, model, version string) (*oip.StatisticsResponse, error)
}

// ServerStats reads the model's breakdown: from the statistics extension
// when the server advertises it and answers, else from Target.MetricsURL
// (Triton's nv_inference_* counters); with Target.MetricsURL it adds the
// server's stream timings.
func (t *OIPTarget) ServerStats(ctx context.Context) (*loadgen.ServerBreakdown, error) {
	b, err := t.statisticsBreakdown(ctx)
	if t.metrics == nil {
		return b, err
	}
	samples, merr := t.metrics.scrape(ctx)
	if merr != nil {
		if err != nil {
			return nil, fmt.Errorf("%v; %v", err, merr)
		}
		return b, nil
	}
	m := modelMetricsOf(samples, t.cfg.Model, t.cfg.ModelVersion)
	if err != nil {
		if !m.found {
			return nil, fmt.Errorf("%v; metrics: no %s series of model %q", err, metricSuccess, t.cfg.Model)
		}
		b = m.breakdown()
	}
	b.Stream = m.stream()
	return b, nil
}

// statisticsBreakdown reads the model's statistics (the statistics
// extension, when the server advertises it), summed over the versions
// listed: successful requests, and queue / compute input / compute infer /
// compute output.
func (t *OIPTarget) statisticsBreakdown(ctx context.Context) (*loadgen.ServerBreakdown, error) {
	if !slices.ContainsFunc(t.info.Server.Extensions, func(e string) bool {
		x, _, ok := specs.ParseAdvertised(e)
		return ok && x == specs.ExtStatistics
	}) {
		return nil, fmt.Errorf("the server does not advertise %s", specs.ExtStatistics)
	}
	sr, ok := t.ctl.(statisticsReader)
	if !ok {
		return nil, fmt.Errorf("the %T client cannot read statistics", t.ctl)
	}
	resp, err := sr.ModelStatistics(ctx, t.cfg.Model, t.cfg.ModelVersion)
	if err != nil {
		return nil, err
	}
	b := &loadgen.ServerBreakdown{Source: "statistics extension", Components: []loadgen.ServerComponent{
		{Name: "queue"}, {Name: "compute_input"}, {Name: "compute_infer"}, {Name: "compute_output"},
	}}
	for _, m := range resp.ModelStats {
		if m.Name != t.cfg.Model {
			continue
		}
		is := m.InferenceStats
		b.Requests += int64(is.Success.Count)
		for i, d := range []oip.Duration{is.Queue, is.ComputeInput, is.ComputeInfer, is.ComputeOutput} {
			b.Components[i].Count += int64(d.Count)
			b.Components[i].TotalNs += int64(d.NS)
		}
	}
	return b, nil
}

// statsTimeout bounds each read of the server's statistics or metrics, so
// that a server slow to answer them delays the run by at most this much.
const statsTimeout = 5 * time.Second
