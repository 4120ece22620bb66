package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oipkit/oipkit/loadgen"
)

// A Reporter writes a rendering of a result. Reporters are pure functions
// of the [Result]: a saved result renders the same as the live one.
type Reporter func(io.Writer) error

// SummaryPercentiles are the percentiles of the human summary.
var SummaryPercentiles = []float64{50, 90, 99, 99.9, 99.99}

// NewJSONReporter renders r as indented JSON.
func NewJSONReporter(r *loadgen.Result) Reporter { return r.WriteJSON }

// NewTextReporter renders a human summary: what ran, counts and rates, the
// percentile table of the three histograms, errors by code with sample
// messages, the stability verdict, the per-step table of a sweep, search
// or stepped profile, the generator's self-check, threshold verdicts and
// the overall verdict.
//
// A percentile marked "≥" is at least the request timeout: timed-out
// requests are in the histogram at their elapsed time, which is only a
// lower bound. A "*" marks a percentile with fewer than 10 samples above
// it, so its value rests on very few requests.
func NewTextReporter(r *loadgen.Result) Reporter {
	return func(w io.Writer) error {
		p := &printer{w: w}
		writeRunText(p, r)
		p.f("\n")
		if err := writeLatencyText(p, w, r); err != nil {
			return err
		}
		if err := writeDetailsText(p, w, r); err != nil {
			return err
		}
		writeGeneratorText(p, r)
		writeVerdictText(p, r)
		return p.err
	}
}

// writeRunText writes the header: what ran against what, how, and its
// counts and rates.
func writeRunText(p *printer, r *loadgen.Result) {
	c := r.Config
	target := c.Target.HTTP
	if target == "" {
		target = c.Target.GRPC
	}
	if r.Segments != nil {
		p.f("oipkit %s load: the test merged from %d segment results: %s\n", r.Tool.Version, len(r.Sources), strings.Join(r.Sources, ", "))
		if len(r.MergedDiffer) > 0 {
			p.f("WARNING:  the merged segments differ in %s (merge forced); the settings below are the first one's\n", strings.Join(r.MergedDiffer, ", "))
		}
		p.f("test:     ")
	} else if len(r.Sources) > 1 {
		p.f("oipkit %s load: merged result of %d runs: %s\n", r.Tool.Version, len(r.Sources), strings.Join(r.Sources, ", "))
		if len(r.MergedDiffer) > 0 {
			p.f("WARNING:  the merged runs differ in %s (merge forced); the settings below are the first run's\n", strings.Join(r.MergedDiffer, ", "))
		}
		p.f("first:    ")
	} else {
		p.f("oipkit %s load: ", r.Tool.Version)
	}
	p.f("model %s", c.Target.Model)
	if c.Target.ModelVersion != "" {
		p.f(" version %s", c.Target.ModelVersion)
	}
	p.f(" over %s at %s", c.Target.Protocol, target)
	if s := loadgen.ServerOf(r); s != "" {
		p.f(" (%s)", s)
	}
	p.f("\n")
	p.f("load:     %s\n", loadgen.DescribeLoad(c))
	writeSegmentText(p, r)
	p.f("run:      started %s, %s, window %s, elapsed %s", r.Start.Format(time.RFC3339), r.EndReason,
		round(r.Duration.D()), round(r.Elapsed.D()))
	if r.Warmup.Requests > 0 {
		p.f(", warm-up %d requests in %s (not recorded)", r.Warmup.Requests, round(r.Warmup.Duration.D()))
	}
	p.f("\n")
	if r.Error != "" {
		p.f("error:    %s\n", r.Error)
	}
	if len(r.Steps) > 0 && r.Steps[0].Kind == loadgen.StepLevel {
		p.f("totals:   every level together (per-level figures in the table below)\n")
	}
	if r.Search != nil {
		p.f("totals:   the highest level that held the SLO (every probe in the table below)\n")
	}
	n := r.Counts
	p.f("requests: scheduled %d, sent %d, completed %d (ok %d, errors %d, timeouts %d), dropped %d, unsent %d\n",
		n.Scheduled, n.Sent, n.Completed, n.OK, n.Errors, n.Timeouts, n.Dropped, n.Unsent)
	p.f("rates:    ")
	if r.OpenLoop() && r.Rates.Requested > 0 {
		p.f("requested %.1f/s, ", r.Rates.Requested)
	}
	p.f("offered %.1f/s, completed %.1f/s, error rate %.3g%%\n", r.Rates.Offered, r.Rates.Completed, 100*r.ErrorRate())
	if c.Streaming != nil {
		p.f("stream:   %d responses, %.1f/s", n.Responses, r.Rates.Responses)
		if h := r.Histograms.ResponsesPerRequest; h != nil && h.Count() > 0 {
			p.f(", per request mean %.2f, min %d, max %d", float64(n.Responses)/float64(n.Completed), int64(h.Min()), int64(h.Max()))
		}
		p.f("\n")
	}
	if n.Clamped > 0 || n.MergeDropped > 0 {
		p.f("warning:  %d values above the histogram range were recorded as its maximum, %d lost in merges\n", n.Clamped, n.MergeDropped)
	}

}

// writeLatencyText writes the latency table of every histogram.
func writeLatencyText(p *printer, w io.Writer, r *loadgen.Result) error {
	c := r.Config
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "latency\t")
	for _, q := range SummaryPercentiles {
		fmt.Fprintf(tw, "p%s\t", strconv.FormatFloat(q, 'f', -1, 64))
	}
	fmt.Fprint(tw, "max\tmean\tcount\t\n")
	timeout := c.Target.Timeout.D()
	for _, row := range []struct {
		name string
		h    *loadgen.Histogram
	}{
		{"response time", r.Histograms.Response},
		{"first response", r.Histograms.FirstResponse},
		{"inter-response", r.Histograms.InterResponse},
		{"service time", r.Histograms.Service},
		{"send lag", r.Histograms.SendLag},
		{"failed (response)", r.Histograms.Failed},
	} {
		if row.h == nil || (row.name == "failed (response)" && row.h.Count() == 0) {
			continue
		}
		fmt.Fprintf(tw, "%s\t", row.name)
		for _, q := range SummaryPercentiles {
			fmt.Fprintf(tw, "%s\t", percentileCell(row.h, q, timeout, row.name != "send lag"))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t\n", loadgen.FormatDuration(row.h.Max()), loadgen.FormatDuration(row.h.Mean()), row.h.Count())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.Streaming != nil {
		p.f("(streaming: response time is the time to the last response and first response the time to the first, both from the intended start; inter-response is each gap between two responses of a request)\n")
	}
	p.f("(response time from the intended start; service time from the actual send; ≥ marks censored values at or above the %s timeout; * marks fewer than 10 samples above)\n", timeout)

	return nil
}

// writeDetailsText writes the failed requests by class, the stability
// verdict, the server's breakdown, the steps' table and the search.
func writeDetailsText(p *printer, w io.Writer, r *loadgen.Result) error {
	n := r.Counts
	if len(r.Errors) > 0 {
		p.f("\nfailed requests by class (first messages):\n")
		for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
			p.f("  %-20s %d", k, r.Errors[k])
			if n.Completed > 0 {
				p.f(" (%.3g%% of completed)", 100*float64(r.Errors[k])/float64(n.Completed))
			}
			p.f("\n")
			for _, m := range r.ErrorSamples[k] {
				p.f("      %q\n", m)
			}
		}
	}
	if s := r.Stability; s != nil {
		p.f("\nstability: %s\n", s.Reason)
		p.f("  throughput %s, p%s %s, %d samples (%d beyond p%s) in %d windows\n",
			describeEstimate(s.Throughput, false), loadgen.FormatPercentile(s.Percentile), describeEstimate(s.Latency, true),
			s.Samples, s.TailSamples, loadgen.FormatPercentile(s.Percentile), s.Windows)
		p.f("  rule: %s\n", s.Rule)
	}
	if sv := r.Server; sv != nil {
		writeServerText(p, sv, r.Histograms.Service.Mean())
		writeServerStreamText(p, sv.Stream, &r.Histograms)
	}
	if len(r.Steps) > 0 {
		if err := writeStepsText(p, w, r); err != nil {
			return err
		}
	}
	if sr := r.Search; sr != nil {
		p.f("\nSLO search: %s\n", sr.Summary)
	}

	return nil
}

// writeGeneratorText writes the generator's self-check.
func writeGeneratorText(p *printer, r *loadgen.Result) {
	n := r.Counts
	ck := r.Checks
	p.f("\ngenerator: ")
	if ck.GeneratorBound {
		p.f("GENERATOR-BOUND — these numbers measure the load generator, not the server\n")
		for _, reason := range ck.Reasons {
			p.f("  - %s\n", reason)
		}
	} else {
		p.f("ok\n")
	}
	p.f("  send-lag p99 %s (tolerance %s), dispatched %.2f%% of schedule, GC pauses %d (max %s), hiccup p99 %s (max %s), CPU %.2fs",
		loadgen.FormatDuration(time.Duration(ck.SendLagP99)), ck.LagTolerance, 100*ck.DispatchRatio, ck.GCPauses.Count,
		loadgen.FormatDuration(time.Duration(ck.GCPauses.Max)), loadgen.FormatDuration(time.Duration(ck.HiccupP99)),
		loadgen.FormatDuration(time.Duration(ck.HiccupMax)), ck.CPUSeconds)
	if ck.CPUUtilization > 0 {
		p.f(" (%.0f%% of %d cores)", 100*ck.CPUUtilization, ck.GOMAXPROCS)
	}
	if n.Completed > 0 {
		p.f(", %.3f ms CPU per request", 1000*ck.CPUSeconds/float64(n.Completed))
	}
	p.f("\n")
	for _, wn := range append(slices.Clone(ck.Warnings), r.Warnings...) {
		p.f("  warning: %s\n", wn)
	}

}

// writeVerdictText writes the thresholds' verdicts and the overall one.
func writeVerdictText(p *printer, r *loadgen.Result) {
	if len(r.Thresholds) > 0 {
		p.f("\nthresholds:\n")
		for _, g := range loadgen.GroupThresholds(r.Thresholds) {
			verdict := "PASS"
			if !g.Pass() {
				verdict = "FAIL"
			}
			note := ""
			if g.Default {
				note = "  (default bound on failed requests)"
			}
			p.f("  %s  %-20s %s%s\n", verdict, g.Threshold, g.Describe(), note)
		}
	}
	v := loadgen.Judge(r)
	p.f("\nverdict:  %s\n", strings.ToUpper(string(v.Status)))
	for _, why := range v.Reasons {
		p.f("  - %s\n", why)
	}
}

func describeEstimate(e loadgen.Estimate, latency bool) string {
	val := func(v float64) string {
		if latency {
			return loadgen.FormatDuration(time.Duration(v))
		}
		return fmt.Sprintf("%.1f/s", v)
	}
	if math.IsInf(e.High, 1) {
		return val(e.Value) + " (no interval yet)"
	}
	return fmt.Sprintf("%s ±%s [%s, %s]", val(e.Value), loadgen.FormatPercent(e.RelHalfWidth()), val(e.Low), val(e.High))
}

// writeServerText prints the server-side breakdown beside the client's
// mean service time.
func writeServerText(p *printer, sv *loadgen.ServerBreakdown, clientMean time.Duration) {
	p.f("\nserver-side breakdown (%s, %d requests), mean per request:\n", sv.Source, sv.Requests)
	var sum time.Duration
	for _, c := range sv.Components {
		p.f("  %-16s %s\n", c.Name, loadgen.FormatDuration(c.Mean()))
		sum += c.Mean()
	}
	if clientMean > 0 {
		p.f("  %-16s %s (client-observed service time %s minus the server's %s)\n", "network+client", loadgen.FormatDuration(max(0, clientMean-sum)),
			loadgen.FormatDuration(clientMean), loadgen.FormatDuration(sum))
	}
}

// writeServerStreamText prints the server's stream timings beside the
// client's means and their differences (what the network, the transport's
// buffering and the client add).
func writeServerStreamText(p *printer, ss *loadgen.ServerStream, h *loadgen.Histograms) {
	if ss == nil {
		return
	}
	p.f("\nserver-side stream timing (metrics), means:\n")
	for _, row := range []struct {
		name   string
		server loadgen.ServerComponent
		client *loadgen.Histogram
	}{{"first response", ss.FirstResponse, h.FirstResponse}, {"inter-response", ss.InterResponse, h.InterResponse}} {
		if row.server.Count == 0 {
			continue
		}
		p.f("  %-16s server %s", row.name, loadgen.FormatDuration(row.server.Mean()))
		if row.client != nil && row.client.Count() > 0 {
			c := row.client.Mean()
			p.f(", client %s (client − server %+.3f ms)", loadgen.FormatDuration(c), float64(c-row.server.Mean())/1e6)
		}
		p.f(", %d timed by the server\n", row.server.Count)
	}
}

// writeStepsText prints one row per step.
func writeStepsText(p *printer, w io.Writer, r *loadgen.Result) error {
	pct := r.Config.Percentile
	if pct == 0 {
		pct = loadgen.DefaultPercentile
	}
	title := map[loadgen.StepKind]string{loadgen.StepLevel: "levels", loadgen.StepProbe: "probes", loadgen.StepProfile: "rate steps"}[r.Steps[0].Kind]
	p.f("\n%s (each with its own histograms; latency is the response time):\n", title)
	if p.err != nil {
		return p.err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	ps := "p" + loadgen.FormatPercentile(pct)
	fmt.Fprintf(tw, "#\tload\tstart\tcompleted/s\tp50\tp90\t%s\tmax\terrors\ttimeouts\tnotes\t\n", ps)
	knee := loadgen.Knee(r.Steps)
	for i, s := range r.Steps {
		h := s.Histograms.Response
		var notes []string
		if s.Verdict != "" {
			v := s.Verdict
			if s.Why != "" {
				v += ": " + s.Why
			}
			notes = append(notes, v)
		}
		if i == knee {
			notes = append(notes, "knee")
		}
		for _, t := range s.Thresholds {
			if !t.Pass && s.Kind == loadgen.StepLevel {
				notes = append(notes, "FAIL "+t.Threshold)
			}
		}
		if s.GeneratorBound && s.Verdict == "" {
			notes = append(notes, "generator-bound")
		}
		if st := s.Stability; st != nil {
			if st.Converged {
				notes = append(notes, fmt.Sprintf("stable in %d windows", st.Windows))
			} else {
				notes = append(notes, "UNSTABLE")
			}
		}
		if s.EndReason != "" {
			notes = append(notes, string(s.EndReason))
		}
		fmt.Fprintf(tw, "%d\t%s\t%.1fs\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t\n", i+1, s.Label(), s.Start, s.Rates.Completed,
			stepCell(h, 50), stepCell(h, 90), stepCell(h, pct), loadgen.FormatDuration(h.Max()), s.Counts.Errors, s.Counts.Timeouts,
			strings.Join(notes, "; "))
	}
	return tw.Flush()
}

func stepCell(h *loadgen.Histogram, q float64) string {
	if h.Count() == 0 {
		return "-"
	}
	return loadgen.FormatDuration(h.Quantile(q))
}

func percentileCell(h *loadgen.Histogram, q float64, timeout time.Duration, censorable bool) string {
	if h.Count() == 0 {
		return "-"
	}
	v := h.Quantile(q)
	s := loadgen.FormatDuration(v)
	if censorable && timeout > 0 && v >= timeout {
		s = "≥" + s
	}
	if float64(h.Count())*(100-q)/100 < 10 {
		s += "*"
	}
	return s
}

// NewIntervalCSVReporter writes one CSV row per interval. Latencies are in
// microseconds; step is the interval's row in the steps table (sweeps and
// stepped profiles):
//
//	start_s,length_s,requested_rate,sent,dropped,completed,ok,errors,timeouts,
//	in_flight,rate,response_p50_us,response_p99_us,response_max_us,
//	service_p50_us,service_p99_us,send_lag_p99_us,response_p90_us,step
//
// A streaming run adds responses,first_response_p50_us,
// first_response_p99_us,inter_response_p50_us,inter_response_p99_us.
func NewIntervalCSVReporter(r *loadgen.Result) Reporter {
	return func(w io.Writer) error {
		cw := csv.NewWriter(w)
		streaming := r.Config.Streaming != nil
		head := []string{"start_s", "length_s", "requested_rate", "sent", "dropped", "completed", "ok", "errors", "timeouts",
			"in_flight", "rate", "response_p50_us", "response_p99_us", "response_max_us", "service_p50_us", "service_p99_us", "send_lag_p99_us",
			"response_p90_us", "step"}
		if streaming {
			head = append(head, "responses", "first_response_p50_us", "first_response_p99_us", "inter_response_p50_us", "inter_response_p99_us")
		}
		_ = cw.Write(head)
		for _, iv := range r.Intervals {
			row := []string{
				ff(iv.Start, 3), ff(iv.Length, 3), ff(iv.RequestedRate, 1),
				fi(iv.Sent), fi(iv.Dropped), fi(iv.Completed), fi(iv.OK), fi(iv.Errors), fi(iv.Timeouts),
				fi(iv.InFlight), ff(iv.Rate, 1),
				us(iv.ResponseP50), us(iv.ResponseP99), us(iv.ResponseMax), us(iv.ServiceP50), us(iv.ServiceP99), us(iv.SendLagP99),
				us(iv.ResponseP90), strconv.Itoa(iv.Step + 1),
			}
			if streaming {
				row = append(row, fi(iv.Responses), us(iv.FirstResponseP50), us(iv.FirstResponseP99), us(iv.InterResponseP50), us(iv.InterResponseP99))
			}
			_ = cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	}
}

// NewSummaryCSVReporter writes rows in the shape of perf_analyzer's -f
// CSV so its consumers can read them — one per level of a sweep, probe of
// a search or step of a profile, else one for the run: "Concurrency",
// "Inferences/Second" and the "p50/p90/p95/p99 latency" and "Avg latency"
// columns in microseconds, taken from the response-time histogram.
// perf_analyzer's client and server breakdown columns (Client Send, Server
// Queue, ...) are omitted; oipkit's own columns follow: the request rate,
// service time, send lag, errors, timeouts and dropped requests. A
// streaming run adds Responses/Second, the time to first response and the
// inter-response gap (p50, p99, in microseconds) and Responses/Request
// (mean); its latency columns are then the time to the last response.
func NewSummaryCSVReporter(r *loadgen.Result) Reporter {
	return func(w io.Writer) error {
		cw := csv.NewWriter(w)
		head := []string{"Concurrency", "Request Rate", "Inferences/Second", "p50 latency", "p90 latency", "p95 latency",
			"p99 latency", "Avg latency", "Service p50", "Service p99", "Send Lag p99", "Errors", "Timeouts", "Dropped"}
		streaming := r.Config.Streaming != nil
		if streaming {
			head = append(head, "Responses/Second", "First Response p50", "First Response p99", "Inter-Response p50", "Inter-Response p99", "Responses/Request")
		}
		_ = cw.Write(head)
		row := func(conc int, rate float64, h loadgen.Histograms, rates loadgen.Rates, c loadgen.Counts) {
			cs := ""
			if conc > 0 {
				cs = strconv.Itoa(conc)
			}
			cells := []string{cs, ff(rate, 1), ff(rates.Completed, 1),
				us(int64(h.Response.Quantile(50))), us(int64(h.Response.Quantile(90))), us(int64(h.Response.Quantile(95))),
				us(int64(h.Response.Quantile(99))), us(int64(h.Response.Mean())),
				us(int64(h.Service.Quantile(50))), us(int64(h.Service.Quantile(99))), us(int64(h.SendLag.Quantile(99))),
				fi(c.Errors), fi(c.Timeouts), fi(c.Dropped)}
			if streaming {
				q := func(h *loadgen.Histogram, p float64) string {
					if h == nil {
						return ""
					}
					return us(int64(h.Quantile(p)))
				}
				perReq := ""
				if c.Completed > 0 {
					perReq = ff(float64(c.Responses)/float64(c.Completed), 2)
				}
				cells = append(cells, ff(rates.Responses, 1), q(h.FirstResponse, 50), q(h.FirstResponse, 99),
					q(h.InterResponse, 50), q(h.InterResponse, 99), perReq)
			}
			_ = cw.Write(cells)
		}
		if len(r.Steps) > 0 {
			for _, s := range r.Steps {
				row(s.Concurrency, s.Rate, s.Histograms, s.Rates, s.Counts)
			}
		} else {
			conc := 0
			if !r.OpenLoop() {
				conc = r.Config.Load.Concurrency
			}
			row(conc, r.Rates.Requested, r.Histograms, r.Rates, r.Counts)
		}
		cw.Flush()
		return cw.Error()
	}
}

// NewPercentilesReporter writes the full percentile spectrum of the
// response-time histogram in HdrHistogram's .hgrm text form (values in
// milliseconds), which HdrHistogram's plotFiles page reads.
func NewPercentilesReporter(r *loadgen.Result) Reporter {
	return func(w io.Writer) error {
		_, err := r.Histograms.Response.HDR().PercentilesPrint(w, 5, 1e6)
		return err
	}
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func ff(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
func fi(v int64) string             { return strconv.FormatInt(v, 10) }
func us(ns int64) string            { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }

// writeSegmentText says which part of a split test a result is: a segment
// (what share it sent, the test's identity, the shared start, the clock
// estimate), or a merge of segments (which were merged, which are
// missing, how far apart the segments started and their clocks were).
func writeSegmentText(p *printer, r *loadgen.Result) {
	if seg := r.Config.Load.Segment; seg != nil {
		p.f("segment:  %s of test %s: ", seg, loadgen.ShortID(r.TestID))
		switch {
		case seg.Count == 1:
			p.f("the whole test")
		case r.OpenLoop():
			p.f("every %s request of the test's schedule from request %d", ordinal(seg.Count), seg.Index)
		default:
			p.f("concurrency %d of %d", seg.Share(int64(r.Config.Load.Concurrency)), r.Config.Load.Concurrency)
		}
		if n := r.Config.Load.Requests; n > 0 {
			p.f(", %d of %d requests", seg.Share(n), n)
		}
		p.f("; thresholds are judged on the merged result (oipkit report)\n")
		if at := r.Config.Load.StartAt; !at.IsZero() {
			p.f("start:    shared start %s\n", at.Format(time.RFC3339Nano))
		}
		if ck := r.Clock; ck != nil {
			p.f("clock:    the target's clock against this generator's: %s\n", ck)
		}
		return
	}
	s := r.Segments
	if s == nil {
		return
	}
	p.f("segments: %d of %d merged (test %s)", len(s.Merged), s.Count, loadgen.ShortID(s.TestID))
	if !s.StartAt.IsZero() {
		p.f(", shared start %s", s.StartAt.Format(time.RFC3339Nano))
	} else {
		p.f(", no shared start: measurements started up to %s apart", round(s.StartSpread.D()))
	}
	if s.ClockSpread != nil {
		p.f("; clocks within %s ± %s of each other (against the target's)", s.ClockSpread.D().Round(time.Microsecond), s.ClockPrecision.D().Round(time.Microsecond))
	}
	p.f("\n")
	for _, why := range s.Incomplete() {
		p.f("          %s\n", why)
	}
}

// ordinal is "2nd", "3rd", "4th", …
func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return strconv.Itoa(n) + "th"
	case n%10 == 2:
		return strconv.Itoa(n) + "nd"
	case n%10 == 3:
		return strconv.Itoa(n) + "rd"
	}
	return strconv.Itoa(n) + "th"
}
