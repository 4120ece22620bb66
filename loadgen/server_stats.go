package loadgen

import (
	"context"
	"time"
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

// Delta is after minus before over the window; nil when either is missing,
// they do not match (a server restarted, a model reloaded) or nothing ran.
func (after *ServerBreakdown) Delta(before *ServerBreakdown) *ServerBreakdown {
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
