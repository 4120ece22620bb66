package loadgen

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
)

// The server-side breakdown: a Target that can read the server's own
// statistics (ServerStatsTarget) is asked for them right before and right
// after the measured window, and the difference goes into Result.Server.

// ServerStatsTarget is a [Target] that reads the server's cumulative
// statistics of the model under load: requests and, per stage, a count and
// a total duration.
type ServerStatsTarget interface {
	ServerStats(ctx context.Context) (*ServerBreakdown, error)
}

// serverStatsTimeout bounds each read, so that a server slow to answer its
// statistics delays the run by at most this much.
const serverStatsTimeout = 5 * time.Second

// readServerStats reads t's statistics, or nil when it has none.
func readServerStats(ctx context.Context, t Target) *ServerBreakdown {
	st, ok := t.(ServerStatsTarget)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, serverStatsTimeout)
	defer cancel()
	b, err := st.ServerStats(ctx)
	if err != nil {
		return nil
	}
	return b
}

// delta is after minus before over the window; nil when either is missing,
// they do not match (a server restarted, a model reloaded) or nothing ran.
func (after *ServerBreakdown) delta(before *ServerBreakdown) *ServerBreakdown {
	if before == nil || after == nil || len(before.Components) != len(after.Components) || after.Requests <= before.Requests {
		return nil
	}
	d := &ServerBreakdown{Source: after.Source, Requests: after.Requests - before.Requests}
	for i, a := range after.Components {
		c, ok := a.minus(before.Components[i])
		if !ok || a.Name != before.Components[i].Name {
			return nil
		}
		d.Components = append(d.Components, c)
	}
	d.Stream = after.Stream.delta(before.Stream)
	return d
}

// delta is after minus before; nil when either is missing, a counter went
// back or no response was timed.
func (after *ServerStream) delta(before *ServerStream) *ServerStream {
	if after == nil {
		return nil
	}
	if before == nil {
		// The families appear with a model's first streamed request.
		before = &ServerStream{}
	}
	first, ok1 := after.FirstResponse.minus(before.FirstResponse)
	gap, ok2 := after.InterResponse.minus(before.InterResponse)
	if !ok1 || !ok2 || first.Count == 0 {
		return nil
	}
	return &ServerStream{FirstResponse: first, InterResponse: gap}
}

// minus is the component's growth since b; false when a counter went back
// (a restarted server, a reloaded model).
func (a ServerComponent) minus(b ServerComponent) (ServerComponent, bool) {
	c := ServerComponent{Name: a.Name, Count: a.Count - b.Count, TotalNs: a.TotalNs - b.TotalNs}
	return c, c.Count >= 0 && c.TotalNs >= 0
}

// statisticsReader is a client of the statistics extension.
type statisticsReader interface {
	ModelStatistics(ctx context.Context, model, version string) (*oip.StatisticsResponse, error)
}

// ServerStats reads the model's breakdown: from the statistics extension
// when the server advertises it and answers, else from --metrics-url
// (Triton's nv_inference_* counters); with --metrics-url it adds the
// server's stream timings.
func (t *OIPTarget) ServerStats(ctx context.Context) (*ServerBreakdown, error) {
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
func (t *OIPTarget) statisticsBreakdown(ctx context.Context) (*ServerBreakdown, error) {
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
	b := &ServerBreakdown{Source: "statistics extension", Components: []ServerComponent{
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
