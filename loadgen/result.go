package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/oipkit/oipkit/version"
)

// Result identification.
const (
	APIVersion = "loadgen.oipkit.dev/v1alpha1"
	ResultKind = "LoadResult"
)

// EndReason says why a run ended.
type EndReason string

// The end reasons.
const (
	EndCompleted EndReason = "completed" // the configured duration elapsed
	EndCanceled  EndReason = "canceled"  // the caller cancelled (e.g. Ctrl-C)
	EndDeadline  EndReason = "deadline"  // the caller's context deadline expired
	EndError     EndReason = "error"     // the run could not go on (see Error)
	// EndAborted: a threshold failed during the run under Config.AbortOnFail
	// (or a sweep level failed one); the run counts as failed, not as
	// incomplete.
	EndAborted EndReason = "aborted"
)

// A Result is a self-describing record of one run, or of several merged:
// what was asked for (Config), by which tool, when, why it ended, what was
// observed, and every histogram, so that any percentile can be recomputed
// and results merged later without re-running.
//
// Rates: Requested is the schedule's mean rate over the window (open loop
// only); Offered is Sent / Duration; Completed is Counts.Completed /
// Elapsed. Duration is the measured window (dispatching stopped at its
// end); Elapsed adds the drain of requests still in flight.
type Result struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Tool       Tool   `json:"tool"`
	Config     Config `json:"config"`
	// Target describes the server, model and payloads the run was sent to.
	Target    *TargetInfo `json:"target,omitempty"`
	Start     time.Time   `json:"start"`
	EndReason EndReason   `json:"endReason"`
	Error     string      `json:"error,omitempty"`
	// Sources lists the files a merged result was made from.
	Sources []string `json:"sources,omitempty"`

	Warmup   WarmupStats `json:"warmup"`
	Duration Duration    `json:"duration"`
	Elapsed  Duration    `json:"elapsed"`
	Rates    Rates       `json:"rates"`
	Counts   Counts      `json:"counts"`
	// Errors counts failed requests by class: "http_503",
	// "grpc_Unavailable", "timeout", "refused" (no connection could be made,
	// or a gRPC call the server said it did not process), "transport", "validation",
	// "stream_error", "other".
	Errors map[string]int64 `json:"errors"`
	// Latency is a convenience copy of the summary percentiles; the
	// histograms are the source of truth.
	Latency    LatencySummaries  `json:"latency"`
	Histograms Histograms        `json:"histograms"`
	Intervals  []IntervalStats   `json:"intervals,omitempty"`
	Checks     Checks            `json:"checks"`
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	Warnings   []string          `json:"warnings,omitempty"`

	// ErrorSamples keeps, for each class of Errors, the first few distinct
	// messages (at most MaxErrorSamples, each cut to MaxErrorMessage
	// bytes), so that a failed run says what went wrong.
	ErrorSamples map[string][]string `json:"errorSamples,omitempty"`
	// Stability is how the measurement ended under the stability rule
	// (Config.Load.Stability); nil for a fixed-length run.
	Stability *Stability `json:"stability,omitempty"`
	// Steps are the rows of a sweep (one per level), an SLO search (one per
	// probe) or a step/linear rate profile (one per step), each with its own
	// histograms. The top-level figures are, for a sweep, every level
	// together; for a search, the highest level that held; for a profile,
	// the whole run.
	Steps []Step `json:"steps,omitempty"`
	// Search is the outcome of an SLO search.
	Search *SearchOutcome `json:"search,omitempty"`
	// Server is the server's own account of where the time went (queue,
	// compute, ...) over the measured window, when the target reports one.
	Server *ServerBreakdown `json:"server,omitempty"`
	// MergedDiffer lists the settings in which the results of a merge
	// differed (a merge forced with different configurations); Config is
	// then only the first result's.
	MergedDiffer []string `json:"mergedDiffer,omitempty"`

	// TestID identifies the test that ran (see [TestID]): every segment of
	// a split test has the same, and so has a single-process run of it.
	TestID string `json:"testId,omitempty"`
	// Clock is a segment's estimate of the offset of the target's clock
	// from its own, taken before the run (the OIP target's EstimateClockOffset).
	Clock *ClockOffset `json:"clock,omitempty"`
	// Segments describes the segments a merged result was made of: which
	// were merged, which are missing or did not complete.
	Segments *SegmentSet `json:"segments,omitempty"`
}

// Error samples are bounded: a hostile server cannot grow a result with
// its error messages.
const (
	MaxErrorSamples = 3
	MaxErrorMessage = 300
)

// ServerBreakdown is the server-side split of request time, from the
// server's statistics (for example the OIP statistics extension's queue and
// compute durations), as deltas over the measured window. Components are in
// pipeline order; reports show each one's mean per request beside the
// client-observed service time, whose remainder is network, serialization
// and client time.
type ServerBreakdown struct {
	Source     string            `json:"source"` // where the figures come from, e.g. "statistics extension"
	Requests   int64             `json:"requests"`
	Components []ServerComponent `json:"components"`
	// Stream is the server's account of a streaming run's responses, from
	// its /metrics (Target.MetricsURL); nil when it exports none.
	Stream *ServerStream `json:"stream,omitempty"`
}

// ServerStream is the server's timing of streamed responses over the
// measured window: its time to first response (request received to first
// response: Triton's nv_inference_first_response_histogram_ms) and the gaps
// between consecutive responses of one request (the reference's
// oip_inference_inter_response_histogram_ms), to set beside the client's.
type ServerStream struct {
	FirstResponse ServerComponent `json:"firstResponse"`
	InterResponse ServerComponent `json:"interResponse"`
}

// ServerComponent is one stage of the server's processing.
type ServerComponent struct {
	Name    string `json:"name"` // e.g. "queue", "compute_input", "compute_infer", "compute_output"
	Count   int64  `json:"count"`
	TotalNs int64  `json:"totalNs"`
}

// Mean is the component's mean duration per counted request.
func (c ServerComponent) Mean() time.Duration {
	if c.Count == 0 {
		return 0
	}
	return time.Duration(c.TotalNs / c.Count)
}

// Tool names the program that produced a result.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// WarmupStats describes the unrecorded warm-up.
type WarmupStats struct {
	Requests int64    `json:"requests"`
	Duration Duration `json:"duration"`
}

// Rates are in requests per second.
type Rates struct {
	Requested float64 `json:"requested,omitempty"`
	Offered   float64 `json:"offered"`
	Completed float64 `json:"completed"`
	// Responses is streamed responses per second (Counts.Responses /
	// Elapsed); streaming runs only.
	Responses float64 `json:"responses,omitempty"`
}

// Counts of requests in the measured window.
//
// Scheduled = Sent + Dropped + Unsent. Completed = OK + Errors + Timeouts
// (every sent request completes, unless the run was cancelled).
type Counts struct {
	Scheduled int64 `json:"scheduled"`
	Sent      int64 `json:"sent"`
	Completed int64 `json:"completed"`
	OK        int64 `json:"ok"`
	Errors    int64 `json:"errors"`   // failed with an answer or a transport error
	Timeouts  int64 `json:"timeouts"` // right-censored: latency >= the timeout
	// Dropped requests were due while MaxInFlight requests were in flight;
	// they were never sent and have no latency.
	Dropped int64 `json:"dropped"`
	// Unsent requests were due in the window but the dispatcher was so far
	// behind that the window closed first (the run is generator-bound).
	Unsent int64 `json:"unsent"`
	// Clamped values exceeded the histogram range and were recorded as its
	// maximum; MergeDropped values were lost merging histograms of
	// different ranges. Both should be zero.
	Clamped      int64 `json:"clamped"`
	MergeDropped int64 `json:"mergeDropped"`
	// Responses counts the responses of streamed requests (streaming runs
	// only).
	Responses int64 `json:"responses,omitempty"`
}

// Histograms are the run's latency distributions, in nanoseconds.
// Response, Service and SendLag hold successful and timed-out requests
// (timeouts as censored values); Failed holds the response times of the
// other failed requests.
type Histograms struct {
	Response *Histogram `json:"response"` // completion − intended start
	Service  *Histogram `json:"service"`  // completion − actual send
	SendLag  *Histogram `json:"sendLag"`  // actual send − intended start
	Failed   *Histogram `json:"failed"`
	// Streaming runs only (nil otherwise). Response is then the time to
	// the last response.
	FirstResponse       *Histogram `json:"firstResponse,omitempty"`       // first response − intended start (TTFT)
	InterResponse       *Histogram `json:"interResponse,omitempty"`       // each gap between consecutive responses of a request
	ResponsesPerRequest *Histogram `json:"responsesPerRequest,omitempty"` // a count per request, not nanoseconds
}

// streamHistograms lists the streaming histograms of h (nil ones too).
func (h *Histograms) streamHistograms() []**Histogram {
	return []**Histogram{&h.FirstResponse, &h.InterResponse, &h.ResponsesPerRequest}
}

// LatencySummaries holds the summary percentiles of each histogram.
type LatencySummaries struct {
	Response LatencySummary `json:"response"`
	Service  LatencySummary `json:"service"`
	SendLag  LatencySummary `json:"sendLag"`
	// Streaming runs only.
	FirstResponse *LatencySummary `json:"firstResponse,omitempty"`
	InterResponse *LatencySummary `json:"interResponse,omitempty"`
}

// LatencySummary holds percentiles in nanoseconds.
type LatencySummary struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50Ns"`
	P90   int64 `json:"p90Ns"`
	P99   int64 `json:"p99Ns"`
	P999  int64 `json:"p99.9Ns"`
	P9999 int64 `json:"p99.99Ns"`
	Max   int64 `json:"maxNs"`
	Mean  int64 `json:"meanNs"`
}

func summarize(h *Histogram) LatencySummary {
	q := func(p float64) int64 { return int64(h.Quantile(p)) }
	return LatencySummary{Count: h.Count(), P50: q(50), P90: q(90), P99: q(99), P999: q(99.9), P9999: q(99.99),
		Max: int64(h.Max()), Mean: int64(h.Mean())}
}

// SummarizeAll summarizes every histogram of h.
func SummarizeAll(h Histograms) LatencySummaries {
	l := LatencySummaries{Response: summarize(h.Response), Service: summarize(h.Service), SendLag: summarize(h.SendLag)}
	if h.FirstResponse != nil {
		s := summarize(h.FirstResponse)
		l.FirstResponse = &s
	}
	if h.InterResponse != nil {
		s := summarize(h.InterResponse)
		l.InterResponse = &s
	}
	return l
}

// Summarize fills Latency from the histograms.
func (r *Result) Summarize() { r.Latency = SummarizeAll(r.Histograms) }

// measures are the figures thresholds are evaluated on.
type measures struct {
	h      Histograms
	counts Counts
	rates  Rates
}

func (r *Result) measures() measures { return measures{r.Histograms, r.Counts, r.Rates} }
func (s *Step) measures() measures   { return measures{s.Histograms, s.Counts, s.Rates} }

// redacted is c as a result records it: header values hidden.
func Redacted(c Config) Config {
	c.Target.Headers = redactHeaders(c.Target.Headers)
	return c
}

// NewResult returns an empty result of a run configured by cfg (header
// headers redacted), for a target or a test that assembles a result itself.
func NewResult(cfg Config) *Result {
	return &Result{
		APIVersion: APIVersion,
		Kind:       ResultKind,
		Tool:       Tool{Name: "oipkit", Version: version.Version},
		Config:     Redacted(cfg),
		TestID:     TestID(cfg),
		Errors:     map[string]int64{},
		Histograms: Histograms{Response: NewHistogram(), Service: NewHistogram(), SendLag: NewHistogram(), Failed: NewHistogram()},
	}
}

// NewErrorResult returns the result of a run that could not start or go on,
// so that even a failed run leaves a self-describing record.
func NewErrorResult(cfg Config, start time.Time, err error) *Result {
	r := NewResult(cfg)
	r.Start = start
	r.EndReason = EndError
	r.Error = err.Error()
	return r
}

func redactHeaders(hs []string) []string {
	var out []string
	for _, h := range hs {
		k, _, _ := strings.Cut(h, ":")
		out = append(out, strings.TrimSpace(k)+": <redacted>")
	}
	return out
}

func errorRate(c Counts) float64 {
	if c.Completed == 0 {
		return 0
	}
	return float64(c.Errors+c.Timeouts) / float64(c.Completed)
}

func (r *Result) computeRates() {
	if d := r.Duration.D().Seconds(); d > 0 {
		r.Rates.Offered = float64(r.Counts.Sent) / d
	}
	if e := r.Elapsed.D().Seconds(); e > 0 {
		r.Rates.Completed = float64(r.Counts.Completed) / e
		r.Rates.Responses = float64(r.Counts.Responses) / e
	}
}

// ErrorRate is the fraction of completed requests that failed or timed out.
func (r *Result) ErrorRate() float64 { return errorRate(r.Counts) }

// OpenLoop reports whether the result comes from an open-loop run (or
// sweep, or search).
func (r *Result) OpenLoop() bool { return r.Config.OpenLoop() }

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MaxResultBytes bounds a result file: a result holds sparse histograms,
// bounded error samples and per-interval summaries, so even a day-long run
// with a sweep stays far below it.
const MaxResultBytes = 256 << 20

// ReadResultFile reads the result in the file at path (see ReadResult);
// errors name the file.
func ReadResultFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ReadResult(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ReadResult reads a result written by WriteJSON, by this or an earlier
// version of oipkit (results of apiVersion loadgen.oipkit.dev/v1alpha1
// only ever gained optional fields). Another kind or apiVersion is refused
// with an error that names it.
func ReadResult(rd io.Reader) (*Result, error) {
	var r Result
	dec := json.NewDecoder(io.LimitReader(rd, MaxResultBytes))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	if r.Kind != ResultKind || r.APIVersion != APIVersion {
		return nil, fmt.Errorf("read result: kind %q apiVersion %q is not an oipkit load result (want kind %s, apiVersion %s)", r.Kind, r.APIVersion, ResultKind, APIVersion)
	}
	if seg := r.Config.Load.Segment; seg != nil {
		if err := seg.check(); err != nil {
			return nil, fmt.Errorf("read result: %w", err)
		}
	}
	fillHistograms(&r.Histograms)
	for i := range r.Steps {
		fillHistograms(&r.Steps[i].Histograms)
	}
	if r.Errors == nil {
		r.Errors = map[string]int64{}
	}
	r.Summarize()
	return &r, nil
}

func fillHistograms(h *Histograms) {
	for _, p := range []**Histogram{&h.Response, &h.Service, &h.SendLag, &h.Failed} {
		if *p == nil || (*p).p == nil {
			*p = NewHistogram()
		}
	}
}

// Differences names the settings in which b's run differs from a's in a way
// that makes their figures incomparable — the model, protocol, server,
// load, inputs or timeout — as "protocol (grpc-raw vs http)". Addresses,
// durations, warm-ups, seeds and thresholds may differ.
func Differences(a, b *Result) []string {
	var out []string
	diff := func(name, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s (%s vs %s)", name, orNone(x), orNone(y)))
		}
	}
	ca, cb := a.Config, b.Config
	diff("model", ca.Target.Model+" "+ca.Target.ModelVersion, cb.Target.Model+" "+cb.Target.ModelVersion)
	diff("protocol", string(ca.Target.Protocol), string(cb.Target.Protocol))
	diff("server", ServerOf(a), ServerOf(b))
	diff("load", DescribeLoad(ca), DescribeLoad(cb))
	diff("inputs", describeInputs(a), describeInputs(b))
	diff("timeout", ca.Target.Timeout.String(), cb.Target.Timeout.String())
	return out
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return strings.TrimSpace(s)
}

// serverOf is "name version" of the server a result was measured on.
func ServerOf(r *Result) string {
	if r.Target == nil {
		return ""
	}
	return strings.TrimSpace(r.Target.Server.Name + " " + r.Target.Server.Version)
}

// describeLoad is the load model in words.
func DescribeLoad(c Config) string {
	l := c.Load
	var s string
	switch {
	case c.SLO != nil:
		s = "SLO search " + strings.Join(ThresholdTexts(c.SLO), ", ")
		if !l.ConcurrencyRange.IsZero() || !l.RateRange.IsZero() {
			s += " over " + l.ConcurrencyRange.String() + l.RateRange.String()
		}
	case !l.ConcurrencyRange.IsZero():
		s = "closed loop, concurrency " + l.ConcurrencyRange.String()
	case !l.RateRange.IsZero():
		s = "open loop, rate " + l.RateRange.String() + "/s"
	case !l.Rate.IsZero():
		s = "open loop, rate " + l.Rate.String() + "/s"
	case c.Pacer != nil:
		s = fmt.Sprintf("open loop, paced by %T", c.Pacer)
	default:
		s = fmt.Sprintf("closed loop, concurrency %d", l.Concurrency)
	}
	switch {
	case c.Pacer != nil:
		s += fmt.Sprintf(", max in flight %d", l.MaxInFlight)
	case c.OpenLoop():
		s += fmt.Sprintf(", %s arrivals, max in flight %d", l.Arrival, l.MaxInFlight)
	}
	if sq := c.Sequence; sq != nil {
		s += fmt.Sprintf(", sequences of %d", sq.Length)
		if sq.Sequences > 0 {
			s += fmt.Sprintf(" (%d live)", sq.Sequences)
		}
	}
	if st := c.Streaming; st != nil {
		s += ", streaming"
		if st.Responses > 0 {
			s += fmt.Sprintf(" (%d responses per request without triton_final_response)", st.Responses)
		}
	}
	return s
}

// describeInputs is the payload in words: data, shapes, parameters.
func describeInputs(r *Result) string {
	in := r.Config.Inputs
	parts := []string{in.Data}
	if in.File != "" {
		parts = []string{"file " + in.File}
	}
	if r.Target != nil {
		for _, t := range r.Target.Inputs {
			parts = append(parts, fmt.Sprintf("%s %s %v", t.Name, t.Datatype, t.Shape))
		}
	} else if len(in.Shapes) > 0 {
		parts = append(parts, strings.Join(in.Shapes, " "))
	}
	if len(in.Parameters) > 0 {
		parts = append(parts, strings.Join(in.Parameters, " "))
	}
	if in.Validate {
		parts = append(parts, "validated")
	}
	return strings.Join(parts, ", ")
}

// SearchOutcome is the result of an SLO search: the highest load found to
// hold every SLO, within the stated resolution, and how it was bracketed.
type SearchOutcome struct {
	// Mode is "rate" (open loop: requests per second) or "concurrency"
	// (closed loop: workers).
	Mode       string   `json:"mode"`
	SLO        []string `json:"slo"`
	Resolution float64  `json:"resolution"`
	// Found says a level held; Holds is the highest that did and Step its
	// index in Result.Steps.
	Found bool    `json:"found"`
	Holds float64 `json:"holds,omitempty"`
	Step  int     `json:"step"`
	// Fails is the lowest level that failed (0: none did up to Max).
	Fails float64 `json:"fails,omitempty"`
	// Limited says the upper bracket is a level the generator could not
	// produce (generator-bound), so the server's limit is only known to be
	// at least Holds.
	Limited bool `json:"limited,omitempty"`
	// Unjudged says no probe could be judged: the highest level probed
	// gave too few samples for the SLO's percentile.
	Unjudged bool    `json:"unjudged,omitempty"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Summary  string  `json:"summary"`
}
