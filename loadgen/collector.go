package loadgen

import (
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/oipkit/oipkit/version"
)

// IntervalStats summarizes one reporting interval. A request belongs to
// the interval in which it completed; Sent and Dropped count dispatches
// during the interval. Latencies are nanoseconds.
type IntervalStats struct {
	Start         float64 `json:"start"`  // seconds since the measurement started
	Length        float64 `json:"length"` // seconds
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
	ResponseP99   int64   `json:"responseP99Ns"`
	ResponseMax   int64   `json:"responseMaxNs"`
	ServiceP50    int64   `json:"serviceP50Ns"`
	ServiceP99    int64   `json:"serviceP99Ns"`
	SendLagP99    int64   `json:"sendLagP99Ns"`
}

// collector closes intervals: it swaps every shard's tally, merges the
// tallies into the interval and the run totals, and emits the interval's
// summary, progress line and log entries. Between start and stop only its
// own goroutine touches its state; after stop, only the caller's.
type collector struct {
	r         *runner
	startWall time.Time
	total     *tally
	iv        *tally
	log       *hdr.HistogramLogWriter
	logErr    error

	t0, last           int64 // measurement start, end of the last closed interval
	lastSent, lastDrop int64
	intervals          []IntervalStats
	mergeDropped       int64
	done               chan struct{}
	exited             chan struct{}
}

func newCollector(r *runner, startWall time.Time) *collector {
	c := &collector{r: r, startWall: startWall, total: newTally(), iv: newTally()}
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
	return c
}

// start begins closing intervals every Interval from t0.
func (c *collector) start(t0 int64) {
	c.t0, c.last = t0, t0
	c.done = make(chan struct{})
	c.exited = make(chan struct{})
	iv := int64(c.r.cfg.Load.Interval)
	go func() {
		defer close(c.exited)
		t := time.NewTimer(time.Duration(iv))
		defer t.Stop()
		next := t0 + iv
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
			}
			c.closeInterval(next)
			next += iv
			t.Reset(time.Duration(next - c.r.now()))
		}
	}()
}

// stop ends the interval goroutine and closes the final, partial interval
// at end (which includes the drain of requests in flight).
func (c *collector) stop(end int64) {
	close(c.done)
	<-c.exited
	if end > c.last || c.iv.ok+c.iv.errors+c.iv.timeouts > 0 {
		c.closeInterval(end)
	}
}

func (c *collector) closeInterval(end int64) {
	iv := c.iv
	for _, s := range c.r.shards {
		t := s.swap()
		c.mergeDropped += iv.add(t)
		s.giveBack(t)
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
		ResponseP99: quantile(iv.response, 99),
		ResponseMax: maxOf(iv.response),
		ServiceP50:  quantile(iv.service, 50),
		ServiceP99:  quantile(iv.service, 99),
		SendLagP99:  quantile(iv.lag, 99),
	}
	if length > 0 {
		st.Rate = float64(st.Completed) / length.Seconds()
	}
	if p := c.r.profile; p != nil {
		st.RequestedRate = p.Rate(time.Duration(c.last-c.t0) + length/2)
	}
	c.intervals = append(c.intervals, st)
	c.lastSent, c.lastDrop = sent, drop
	c.writeLog(iv, c.last, end)
	c.last = end
	c.mergeDropped += c.total.add(iv)
	iv.reset()
	if c.r.cfg.Progress != nil {
		c.r.cfg.Progress(st)
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

// fill copies the run totals into res.
func (c *collector) fill(res *Result) {
	t := c.total
	res.Histograms = Histograms{
		Response: &Histogram{t.response},
		Service:  &Histogram{t.service},
		SendLag:  &Histogram{t.lag},
		Failed:   &Histogram{t.failed},
	}
	res.Counts.OK = t.ok
	res.Counts.Errors = t.errors
	res.Counts.Timeouts = t.timeouts
	res.Counts.Completed = t.ok + t.errors + t.timeouts
	res.Counts.Clamped = t.clamped
	res.Counts.MergeDropped = c.mergeDropped
	res.Errors = map[string]int64{}
	for k, v := range t.codes {
		res.Errors[k.String()] += v
	}
	if t.timeouts > 0 {
		res.Errors["timeout"] += t.timeouts
	}
	res.Intervals = c.intervals
	if c.logErr != nil {
		res.Warnings = append(res.Warnings, c.logErr.Error())
	}
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
