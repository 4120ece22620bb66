package loadgen

import "time"

// Add adds o's counts to c's (merging results).
func (c *Counts) Add(o Counts) {
	c.Scheduled += o.Scheduled
	c.Sent += o.Sent
	c.Completed += o.Completed
	c.OK += o.OK
	c.Errors += o.Errors
	c.Timeouts += o.Timeouts
	c.Dropped += o.Dropped
	c.Unsent += o.Unsent
	c.Clamped += o.Clamped
	c.MergeDropped += o.MergeDropped
	c.Responses += o.Responses
}

// Add adds o's histograms to h's and returns the values lost.
func (h *Histograms) Add(o Histograms) int64 {
	var d int64
	for i, from := range o.streamHistograms() {
		to := h.streamHistograms()[i]
		if *from == nil {
			continue
		}
		if *to == nil {
			*to = NewHistogram()
		}
		d += (*to).Merge(*from)
	}
	for _, p := range []struct{ to, from *Histogram }{
		{h.Response, o.Response}, {h.Service, o.Service}, {h.SendLag, o.SendLag}, {h.Failed, o.Failed},
	} {
		if p.from != nil {
			d += p.to.Merge(p.from)
		}
	}
	return d
}

// AppendErrorSample adds msg to a class's kept error messages, keeping the
// first few distinct ones as a run does.
func AppendErrorSample(samples []string, msg string) []string { return addSample(samples, msg) }

// Recompute derives a result's rates, self-check figures (dispatch ratio,
// send lag, late sends, CPU utilisation over cpuElapsed) and latency
// summaries from its counts and histograms, as a run does at its end: for
// a result made by adding others up (package merge).
func (r *Result) Recompute(cpuElapsed time.Duration) {
	r.computeRates()
	r.Checks.DispatchRatio = 1
	if r.Counts.Scheduled > 0 && r.OpenLoop() {
		r.Checks.DispatchRatio = float64(r.Counts.Sent+r.Counts.Dropped) / float64(r.Counts.Scheduled)
	}
	r.Checks.SendLagP99 = int64(r.Histograms.SendLag.Quantile(99))
	r.Checks.LateSends = r.Histograms.SendLag.countAbove(int64(r.Checks.LagTolerance))
	if e := cpuElapsed.Seconds(); e > 0 && r.Checks.GOMAXPROCS > 0 {
		r.Checks.CPUUtilization = r.Checks.CPUSeconds / e / float64(r.Checks.GOMAXPROCS)
	}
	r.Checks.warn() // one warning of each kind, from the recomputed figures
	r.Summarize()
}

// Segmented is the load's segment: its Segment, or the whole test (0 of 1).
func (l LoadConfig) Segmented() Segment { return l.segment() }
