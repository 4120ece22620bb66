package loadgen

import (
	"fmt"
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/oipkit/oipkit/version"
)

// IntervalStats summarizes one reporting interval. A request belongs to
// the interval in which it completed; Sent and Dropped count dispatches
// during the interval. Latencies are nanoseconds.
type IntervalStats struct {
	Start  float64 `json:"start"`  // seconds since the measurement started
	Length float64 `json:"length"` // seconds
	// Step is the index in Result.Steps of the sweep level or profile step
	// the interval belongs to (0 when there are none).
	Step          int     `json:"step,omitempty"`
	RequestedRate float64 `json:"requestedRate,omitempty"`
	Sent          int64   `json:"sent"`
	Dropped       int64   `json:"dropped,omitempty"`
	Completed     int64   `json:"completed"`
	OK            int64   `json:"ok"`
	Errors        int64   `json:"errors,omitempty"`
	Timeouts      int64   `json:"timeouts,omitempty"`
	InFlight      int64   `json:"inFlight"` // at the interval's end
	Rate          float64 `json:"rate"`     // completed per second
	ResponseP50   int64   `json:"responseP50Ns"`
	ResponseP90   int64   `json:"responseP90Ns,omitempty"`
	ResponseP99   int64   `json:"responseP99Ns"`
	ResponseMax   int64   `json:"responseMaxNs"`
	ServiceP50    int64   `json:"serviceP50Ns"`
	ServiceP99    int64   `json:"serviceP99Ns"`
	SendLagP99    int64   `json:"sendLagP99Ns"`
	// Streaming runs only: responses received (of requests that
	// completed in the interval, gaps as they arrived) and percentiles of
	// the time to first response and of the inter-response gap.
	Responses        int64 `json:"responses,omitempty"`
	FirstResponseP50 int64 `json:"firstResponseP50Ns,omitempty"`
	FirstResponseP99 int64 `json:"firstResponseP99Ns,omitempty"`
	InterResponseP50 int64 `json:"interResponseP50Ns,omitempty"`
	InterResponseP99 int64 `json:"interResponseP99Ns,omitempty"`
	// Histograms are the interval's own histograms, kept by the segments
	// of a split test (Config.Load.Segment) so that merging them gives the
	// merged intervals' percentiles exactly; nil otherwise.
	Histograms *Histograms `json:"histograms,omitempty"`
}

// collector closes intervals: it swaps every shard's tally, merges the
// tallies into the interval, the current profile step and the run totals,
// and emits the interval's summary, progress line and log entries. At the
// end of every full interval it applies the stability rule and the
// abort-on-fail thresholds, and stops the run when either says so.
// Between start and stop only its own goroutine touches its state; after
// stop, only the caller's.
type collector struct {
	r         *runner
	startWall time.Time
	total     *tally
	iv        *tally
	spare     *tally // swapped into each shard in turn by closeInterval
	log       *hdr.HistogramLogWriter
	logErr    error

	t0, last           int64 // measurement start, end of the last closed interval
	lastSent, lastDrop int64
	intervals          []IntervalStats
	mergeDropped       int64

	// cuts are the interval ends that are not ticks: profile step
	// boundaries, as offsets from t0.
	cuts  []time.Duration
	steps []stepTally
	pstep []profileStep

	judge     *stabilityJudge
	stability *Stability
	aborts    []Threshold // evaluated at every full interval (Config.AbortOnFail)
	abortWhy  string

	done   chan struct{}
	exited chan struct{}
}

// stepTally accumulates one profile step in sparse histograms.
type stepTally struct {
	h                             Histograms
	ok, errors, timeouts, clamped int64
	sent, dropped                 int64
	responses                     int64
	codes                         map[errorKey]int64
	samples                       map[errorKey][]string
}

func newCollector(r *runner, startWall time.Time) *collector {
	st := r.cfg.Streaming != nil
	c := &collector{r: r, startWall: startWall, total: newTally(st), iv: newTally(st), spare: newTally(st)}
	if w := r.cfg.HDRLog; w != nil {
		c.log = hdr.NewHistogramLogWriter(w)
		ms := startWall.UnixMilli()
		c.log.SetBaseTime(ms)
		c.logErr = firstErr(
			c.log.OutputComment(fmt.Sprintf("[Logged with oipkit %s; tags: response, service, send_lag; values in ns, Interval_Max in ms]", version.Version)),
			c.log.OutputStartTime(ms),
			c.log.OutputBaseTime(ms),
			c.log.OutputLegend(),
		)
	}
	if p := r.profile; p != nil {
		c.pstep = pacerSteps(p, r.cfg.Load.Duration.D(), r.cfg.Load.Interval.D())
		for i, s := range c.pstep {
			h := Histograms{Response: NewHistogram(), Service: NewHistogram(), SendLag: NewHistogram(), Failed: NewHistogram()}
			if st {
				h.FirstResponse, h.InterResponse, h.ResponsesPerRequest = NewHistogram(), NewHistogram(), NewHistogram()
			}
			c.steps = append(c.steps, stepTally{h: h, codes: map[errorKey]int64{}, samples: map[errorKey][]string{}})
			if i > 0 {
				c.cuts = append(c.cuts, s.start)
			}
		}
	}
	if st := r.cfg.Load.Stability; st != nil {
		c.judge = &stabilityJudge{tol: st.Tolerance, pct: r.cfg.Percentile}
	}
	if r.cfg.AbortOnFail {
		c.aborts = r.cfg.Gates()
	}
	return c
}

// start begins closing intervals every Interval from t0, and at profile
// step boundaries.
func (c *collector) start(t0 int64) {
	c.t0, c.last = t0, t0
	c.done = make(chan struct{})
	c.exited = make(chan struct{})
	iv := int64(c.r.cfg.Load.Interval)
	go func() {
		defer close(c.exited)
		nextTick := t0 + iv
		cuts := c.cuts
		next := func() int64 {
			if len(cuts) > 0 && t0+int64(cuts[0]) < nextTick {
				return t0 + int64(cuts[0])
			}
			return nextTick
		}
		// The window's last interval is closed by stop, after the drain of
		// requests in flight, rather than at the tick that ends the window
		// (which would leave a sliver of an interval holding only the drain).
		last := int64(math.MaxInt64)
		if d := c.r.cfg.Load.Duration; d > 0 {
			last = t0 + int64(d)
		}
		at := next()
		t := time.NewTimer(time.Duration(at - c.r.now()))
		defer t.Stop()
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
			}
			if at >= last || c.r.stopped() {
				<-c.done
				return
			}
			c.closeInterval(at, at-c.last == iv)
			if len(cuts) > 0 && at == t0+int64(cuts[0]) {
				cuts = cuts[1:]
			}
			if at == nextTick {
				nextTick += iv
			}
			at = next()
			t.Reset(time.Duration(at - c.r.now()))
		}
	}()
}

// stop ends the interval goroutine and closes the final, partial interval
// at end (which includes the drain of requests in flight).
func (c *collector) stop(end int64) {
	close(c.done)
	<-c.exited
	if end > c.last || c.iv.ok+c.iv.errors+c.iv.timeouts > 0 {
		c.closeInterval(end, false)
	}
	if c.judge != nil && c.stability == nil {
		s := c.judge.judge()
		s.Reason = fmt.Sprintf("not converged in %s: %s", time.Duration(end-c.t0).Round(time.Millisecond), s.Reason)
		c.stability = &s
	}
}

// closeInterval closes the interval ending at end; full says it lasted a
// whole Interval (the stability rule only uses those).
func (c *collector) closeInterval(end int64, full bool) {
	iv := c.iv
	for _, s := range c.r.shards {
		t := s.swap(c.spare)
		c.mergeDropped += iv.add(t)
		t.reset()
		c.spare = t
	}
	sent := int64(c.r.sent.Load())
	drop := c.r.dropped.Load()
	length := time.Duration(end - c.last)
	st := IntervalStats{
		Start:       time.Duration(c.last - c.t0).Seconds(),
		Length:      length.Seconds(),
		Sent:        sent - c.lastSent,
		Dropped:     drop - c.lastDrop,
		OK:          iv.ok,
		Errors:      iv.errors,
		Timeouts:    iv.timeouts,
		Completed:   iv.ok + iv.errors + iv.timeouts,
		InFlight:    c.r.inflight.Load(),
		ResponseP50: quantile(iv.response, 50),
		ResponseP90: quantile(iv.response, 90),
		ResponseP99: quantile(iv.response, 99),
		ResponseMax: maxOf(iv.response),
		ServiceP50:  quantile(iv.service, 50),
		ServiceP99:  quantile(iv.service, 99),
		SendLagP99:  quantile(iv.lag, 99),
	}
	if length > 0 {
		st.Rate = float64(st.Completed) / length.Seconds()
	}
	if ss := iv.stream; ss != nil {
		st.Responses = ss.responses
		st.FirstResponseP50, st.FirstResponseP99 = quantile(ss.first, 50), quantile(ss.first, 99)
		st.InterResponseP50, st.InterResponseP99 = quantile(ss.gap, 50), quantile(ss.gap, 99)
	}
	if p := c.r.profile; p != nil {
		st.RequestedRate = c.r.rateShare() * p.Rate(time.Duration(c.last-c.t0)+length/2)
	}
	if c.r.cfg.Load.Segment != nil {
		var h Histograms
		var d [4]int64
		h.Response, d[0] = histogramOf(iv.response)
		h.Service, d[1] = histogramOf(iv.service)
		h.SendLag, d[2] = histogramOf(iv.lag)
		h.Failed, d[3] = histogramOf(iv.failed)
		c.mergeDropped += d[0] + d[1] + d[2] + d[3]
		if iv.stream != nil {
			c.mergeDropped += iv.stream.fill(&h)
		}
		st.Histograms = &h
	}
	if len(c.steps) > 0 {
		st.Step = c.stepAt(time.Duration(c.last-c.t0) + length/2)
		c.addToStep(&c.steps[st.Step], iv, st)
	}
	c.intervals = append(c.intervals, st)
	c.lastSent, c.lastDrop = sent, drop
	c.writeLog(iv, c.last, end)
	c.last = end
	if c.judge != nil && full {
		h, d := histogramOf(iv.response)
		c.mergeDropped += d
		c.judge.windows = append(c.judge.windows, stabilityWindow{rate: st.Rate, response: h})
	}
	c.mergeDropped += c.total.add(iv)
	iv.reset()
	if c.r.cfg.Progress != nil {
		c.r.cfg.Progress(st)
	}
	if !full {
		return
	}
	if c.judge != nil {
		if s := c.judge.judge(); s.Converged {
			c.stability = &s
			c.r.stopNow()
		}
	}
	if len(c.aborts) > 0 && len(c.intervals) >= abortAfterWindows {
		c.checkAbort(end)
	}
}

// abortAfterWindows is how many windows pass before Config.AbortOnFail
// judges the run, so that a threshold is not judged on a handful of
// requests.
const abortAfterWindows = 5

// checkAbort evaluates the thresholds on the totals so far and stops the
// run on the first that fails. A percentile threshold is only judged once
// at least 10 samples lie beyond it.
func (c *collector) checkAbort(end int64) {
	t := c.total
	m := measures{
		counts: Counts{OK: t.ok, Errors: t.errors, Timeouts: t.timeouts, Completed: t.ok + t.errors + t.timeouts,
			Sent: int64(c.r.sent.Load()), Dropped: c.r.dropped.Load()},
	}
	m.h.Response, _ = histogramOf(t.response)
	m.h.Service, _ = histogramOf(t.service)
	m.h.SendLag, _ = histogramOf(t.lag)
	if t.stream != nil {
		t.stream.fill(&m.h)
		m.counts.Responses = t.stream.responses
	}
	if s := time.Duration(end - c.t0).Seconds(); s > 0 {
		m.rates.Completed = float64(m.counts.Completed) / s
		m.rates.Offered = float64(m.counts.Sent) / s
	}
	for _, th := range c.aborts {
		if q, ok := percentileOf(th.metric); ok && float64(m.counts.Completed)*(100-q)/100 < 10 {
			continue
		}
		if v := th.evalOn(m); !v.Pass {
			c.abortWhy = fmt.Sprintf("threshold %s failed after %s (actual %s)", v.Threshold,
				time.Duration(end-c.t0).Round(time.Millisecond), v.ActualStr)
			c.r.stopNow()
			return
		}
	}
}

// stepAt is the profile step holding offset off.
func (c *collector) stepAt(off time.Duration) int {
	for i := len(c.pstep) - 1; i > 0; i-- {
		if off >= c.pstep[i].start {
			return i
		}
	}
	return 0
}

func (c *collector) addToStep(s *stepTally, iv *tally, st IntervalStats) {
	c.mergeDropped += s.h.Response.p.MergeFrom(iv.response) + s.h.Service.p.MergeFrom(iv.service) +
		s.h.SendLag.p.MergeFrom(iv.lag) + s.h.Failed.mergeDense(iv.failed)
	if ss := iv.stream; ss != nil {
		c.mergeDropped += s.h.FirstResponse.p.MergeFrom(ss.first) + s.h.InterResponse.p.MergeFrom(ss.gap) +
			s.h.ResponsesPerRequest.p.MergeFrom(ss.perRequest)
		s.responses += ss.responses
	}
	s.ok += iv.ok
	s.errors += iv.errors
	s.timeouts += iv.timeouts
	s.clamped += iv.clamped
	s.sent += st.Sent
	s.dropped += st.Dropped
	for k, v := range iv.codes {
		s.codes[k] += v
	}
	for k, msgs := range iv.samples {
		for _, m := range msgs {
			s.samples[k] = addSample(s.samples[k], m)
		}
	}
}

func (c *collector) writeLog(iv *tally, from, to int64) {
	if c.log == nil || c.logErr != nil {
		return
	}
	startMs := c.startWall.UnixMilli() + time.Duration(from-c.t0).Milliseconds()
	endMs := c.startWall.UnixMilli() + time.Duration(to-c.t0).Milliseconds()
	for _, e := range []struct {
		tag string
		h   *hdr.Histogram
	}{{"response", iv.response}, {"service", iv.service}, {"send_lag", iv.lag}} {
		e.h.SetTag(e.tag)
		e.h.SetStartTimeMs(startMs)
		e.h.SetEndTimeMs(endMs)
		if err := c.log.OutputIntervalHistogram(e.h); err != nil {
			c.logErr = fmt.Errorf("write HdrHistogram log: %w", err)
			return
		}
	}
}

// fill copies the run totals, the profile steps and the stability verdict
// into res.
func (c *collector) fill(res *Result) {
	t := c.total
	var d [4]int64
	res.Histograms.Response, d[0] = histogramOf(t.response)
	res.Histograms.Service, d[1] = histogramOf(t.service)
	res.Histograms.SendLag, d[2] = histogramOf(t.lag)
	res.Histograms.Failed, d[3] = histogramOf(t.failed)
	res.Counts.OK = t.ok
	res.Counts.Errors = t.errors
	res.Counts.Timeouts = t.timeouts
	res.Counts.Completed = t.ok + t.errors + t.timeouts
	res.Counts.Clamped = t.clamped
	res.Counts.MergeDropped = c.mergeDropped + d[0] + d[1] + d[2] + d[3]
	if t.stream != nil {
		res.Counts.MergeDropped += t.stream.fill(&res.Histograms)
		res.Counts.Responses = t.stream.responses
	}
	res.Errors, res.ErrorSamples = errorTables(t.codes, t.timeouts, t.samples)
	res.Intervals = c.intervals
	res.Stability = c.stability
	if c.logErr != nil {
		res.Warnings = append(res.Warnings, c.logErr.Error())
	}
	for i, s := range c.steps {
		ps := c.pstep[i]
		step := Step{
			Kind: StepProfile, Rate: c.r.rateShare() * ps.rate, Start: ps.start.Seconds(), Duration: Duration(ps.end - ps.start),
			Histograms: s.h,
			Counts: Counts{Sent: s.sent, Dropped: s.dropped, OK: s.ok, Errors: s.errors, Timeouts: s.timeouts,
				Completed: s.ok + s.errors + s.timeouts, Clamped: s.clamped, Responses: s.responses},
		}
		step.Counts.Scheduled = step.Counts.Sent + step.Counts.Dropped
		step.Elapsed = step.Duration
		if ps.end >= res.Duration.D() { // the last step holds the drain
			step.Elapsed = res.Elapsed - Duration(ps.start)
		}
		if ps.end > res.Duration.D() {
			step.Duration = res.Duration - Duration(ps.start)
		}
		if step.Duration <= 0 {
			continue // the run ended before this step
		}
		step.Errors, step.ErrorSamples = errorTables(s.codes, s.timeouts, s.samples)
		step.Rates.Requested = c.r.rateShare() * ps.rate
		step.Rates.Offered = float64(s.sent) / step.Duration.D().Seconds()
		step.Rates.Completed = float64(step.Counts.Completed) / step.Elapsed.D().Seconds()
		step.Rates.Responses = float64(s.responses) / step.Elapsed.D().Seconds()
		step.Latency = SummarizeAll(step.Histograms)
		res.Steps = append(res.Steps, step)
	}
}

// errorTables turns the recorders' error classes into a result's Errors
// and ErrorSamples.
func errorTables(codes map[errorKey]int64, timeouts int64, samples map[errorKey][]string) (map[string]int64, map[string][]string) {
	errs := map[string]int64{}
	for k, v := range codes {
		errs[k.String()] += v
	}
	if timeouts > 0 {
		errs["timeout"] += timeouts
	}
	var smp map[string][]string
	for k, msgs := range samples {
		if len(msgs) == 0 {
			continue
		}
		if smp == nil {
			smp = map[string][]string{}
		}
		smp[k.String()] = append([]string(nil), msgs...)
	}
	return errs, smp
}

func quantile(h *hdr.Histogram, p float64) int64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return h.ValueAtPercentile(p)
}

func maxOf(h *hdr.Histogram) int64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return h.Max()
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
