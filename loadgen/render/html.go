package render

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/verdict"

	"github.com/oipkit/oipkit/htmlpage"
	"github.com/oipkit/oipkit/version"
)

// NewHTMLReporter renders one result as a self-contained HTML page (see
// package htmlpage): the verdict and headline figures, the latency over
// time (p50/p90/p99/max per interval, send lag, throughput and failed
// requests), the percentile spectrum on HdrHistogram's log axis, for a
// sweep, search or stepped profile the throughput/latency curve with its
// knee and SLO line and the per-step table, the errors with their sample
// messages, the server-side breakdown when the result carries one, and
// the generator's self-check.
func NewHTMLReporter(r *loadgen.Result) Reporter {
	return func(w io.Writer) error {
		return writeHTML(w, []*loadgen.Result{r}, []string{Label(r)})
	}
}

// NewComparisonHTMLReporter renders several results overlaid, one series
// per result named by labels (see [Label]): a table of their headline
// figures, their percentile spectra, their p99 over time, their sweep
// curves when they are sweeps, and each one's details below.
func NewComparisonHTMLReporter(results []*loadgen.Result, labels []string) Reporter {
	return func(w io.Writer) error {
		if len(results) == 0 || len(labels) != len(results) {
			return fmt.Errorf("html comparison: %d results, %d labels", len(results), len(labels))
		}
		return writeHTML(w, results, labels)
	}
}

// Label names a result for a comparison: server, protocol and load, e.g.
// "mlserver 1.7.1 · grpc-raw · c=4".
func Label(r *loadgen.Result) string {
	parts := []string{}
	if s := loadgen.ServerOf(r); s != "" {
		parts = append(parts, s)
	}
	parts = append(parts, string(r.Config.Target.Protocol))
	l := r.Config.Load
	switch {
	case r.Config.SLO != nil:
		parts = append(parts, "SLO search")
	case !l.ConcurrencyRange.IsZero():
		parts = append(parts, "c="+l.ConcurrencyRange.String())
	case !l.RateRange.IsZero():
		parts = append(parts, l.RateRange.String()+"/s")
	case !l.Rate.IsZero():
		parts = append(parts, l.Rate.String()+"/s")
	default:
		parts = append(parts, fmt.Sprintf("c=%d", l.Concurrency))
	}
	if len(r.Sources) > 1 {
		parts = append(parts, fmt.Sprintf("merged ×%d", len(r.Sources)))
	}
	return strings.Join(parts, " · ")
}

// htmlRun is one result as the templates see it.
type htmlRun struct {
	R       *loadgen.Result
	Label   string
	Index   int
	Verdict loadgen.Verdict
	Pct     float64
	Knee    int
	Cards   []card
	Lat     []latRow
	Errors  []errRow
	Steps   []stepRow
	Server  *serverView
	Stream  []streamRow // the server's stream timings beside the client's
	Config  string
	Anchor  string
	Gates   []loadgen.ThresholdGroup
}

type card struct{ K, V string }

type latRow struct {
	Name  string
	Cells []string
	Max   string
	Mean  string
	Count int64
}

type errRow struct {
	Class   string
	Count   int64
	Share   string
	Samples []string
}

type stepRow struct {
	N                  int
	Label, Start, Rate string
	P50, P90, PP, Max  string
	Errors, Timeouts   int64
	Notes              string
	Knee, Bad          bool
}

// streamRow is one stream timing, the server's mean beside the client's.
type streamRow struct {
	Name, Server, Client, Diff string
	Count                      int64
}

type serverView struct {
	Source   string
	Requests int64
	Parts    []serverPart
}

type serverPart struct {
	Name, Mean, Color string
	Width             float64 // percent of the client-observed service time
}

// writeHTML writes the page for one result or a comparison of several.
func writeHTML(w io.Writer, results []*loadgen.Result, labels []string) error {
	var runs []htmlRun
	for i, r := range results {
		runs = append(runs, viewOf(r, labels[i], i))
	}
	var charts []htmlpage.Chart
	var body bytes.Buffer
	cmp := len(runs) > 1
	title := "oipkit load: " + runs[0].Label
	if cmp {
		title = fmt.Sprintf("oipkit load: %d runs compared", len(runs))
	}

	data := map[string]any{"Title": title, "Runs": runs, "Compare": cmp, "Version": version.Version}
	if cmp {
		data["Differ"] = comparisonDifferences(results)
		data["Spectrum"] = htmlpage.ChartBox("spectrum", "Response-time percentile spectrum",
			"Every run's full distribution from its histogram; x is HdrHistogram's 1/(1−p) axis, so the tail gets the room.")
		charts = append(charts, spectrumChart("spectrum", results, labels, false))
		data["OverTime"] = htmlpage.ChartBox("p99-time", "Response-time p99 per interval",
			"Each run from its own start; the interval's p99 of the requests that completed in it.")
		charts = append(charts, p99OverTime("p99-time", results, labels))
		if anyStreaming(results) {
			data["StreamFirst"] = htmlpage.ChartBox("stream-first", "Time to first response percentile spectrum",
				"Streaming runs: each request's time to its first response, from its intended start.")
			data["StreamGap"] = htmlpage.ChartBox("stream-gap", "Inter-response gap percentile spectrum",
				"Streaming runs: every gap between two consecutive responses of one request.")
			charts = append(charts,
				histogramSpectrum("stream-first", results, labels, func(h *loadgen.Histograms) *loadgen.Histogram { return h.FirstResponse }),
				histogramSpectrum("stream-gap", results, labels, func(h *loadgen.Histograms) *loadgen.Histogram { return h.InterResponse }))
		}
		if anySteps(results) {
			data["Curve"] = htmlpage.ChartBox("curve", "Throughput and latency by level",
				"Latency at the chosen percentile against the completed rate, one point per level, probe or step.")
			charts = append(charts, curveChart("curve", results, labels))
		}
	}
	if err := pageTemplate().ExecuteTemplate(&body, "head", data); err != nil {
		return err
	}
	for i := range runs {
		run := &runs[i]
		id := fmt.Sprintf("r%d", i)
		sec := map[string]any{"Run": run, "Compare": cmp}
		if len(run.R.Intervals) > 0 {
			sec["Latency"] = htmlpage.ChartBox(id+"-lat", "Response time per interval",
				"p50, p90, p99 and max of the requests that completed in each interval, and the send-lag p99 (how late requests left against their schedule).")
			sec["Traffic"] = htmlpage.ChartBox(id+"-traffic", "Throughput and failed requests per interval", "")
			charts = append(charts, latencyOverTime(id+"-lat", run.R), trafficOverTime(id+"-traffic", run.R))
		}
		if !cmp && run.R.Histograms.Response.Count() > 0 {
			sec["Spectrum"] = htmlpage.ChartBox(id+"-spectrum", "Percentile spectrum",
				"Response time from the run's histogram (open loop: also the service time, from the actual send); x is HdrHistogram's 1/(1−p) axis.")
			charts = append(charts, spectrumChart(id+"-spectrum", results[i:i+1], nil, true))
		}
		if !cmp && streaming(run.R) {
			sec["Stream"] = htmlpage.ChartBox(id+"-stream", "Streaming: time to first response and inter-response gaps",
				"Percentile spectra of each request's time to first response (from its intended start) and of every gap between two consecutive responses of one request.")
			charts = append(charts, streamSpectrum(id+"-stream", run.R))
		}
		if len(run.R.Steps) > 0 {
			sec["Curve"] = htmlpage.ChartBox(id+"-curve", "Throughput / latency curve",
				fmt.Sprintf("p50 and p%s of the response time against the completed rate, one point per %s; the knee is where throughput ÷ mean latency peaks.",
					loadgen.FormatPercentile(run.Pct), stepNoun(run.R.Steps[0].Kind)))
			charts = append(charts, curveChart(id+"-curve", results[i:i+1], nil))
		}
		if err := pageTemplate().ExecuteTemplate(&body, "run", sec); err != nil {
			return err
		}
	}
	return htmlpage.Write(w, htmlpage.Page{
		Title:     title,
		Body:      template.HTML(body.String()),
		Charts:    charts,
		Generator: "oipkit " + version.Version,
	})
}

func stepNoun(k loadgen.StepKind) string {
	return map[loadgen.StepKind]string{loadgen.StepLevel: "level", loadgen.StepProbe: "probe", loadgen.StepProfile: "rate step"}[k]
}

func anySteps(rs []*loadgen.Result) bool {
	for _, r := range rs {
		if len(r.Steps) > 0 {
			return true
		}
	}
	return false
}

// comparisonDifferences lists what the compared runs differ in.
func comparisonDifferences(rs []*loadgen.Result) []string {
	var out []string
	for _, r := range rs[1:] {
		for _, d := range loadgen.Differences(rs[0], r) {
			name, _, _ := strings.Cut(d, " (")
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

func viewOf(r *loadgen.Result, label string, i int) htmlRun {
	pct := r.Config.Percentile
	if pct == 0 {
		pct = loadgen.DefaultPercentile
	}
	v := htmlRun{R: r, Label: label, Index: i, Verdict: loadgen.Judge(r), Pct: pct, Knee: loadgen.Knee(r.Steps), Anchor: fmt.Sprintf("run-%d", i)}
	h := r.Histograms
	v.Cards = []card{
		{"completed/s", fmt.Sprintf("%.1f", r.Rates.Completed)},
		{"p50", stepCell(h.Response, 50)},
		{"p99", stepCell(h.Response, 99)},
		{"max", loadgen.FormatDuration(h.Response.Max())},
		{"error rate", fmt.Sprintf("%.3g%%", 100*r.ErrorRate())},
		{"requests", fmt.Sprint(r.Counts.Completed)},
	}
	if seg := r.Config.Load.Segment; seg != nil {
		v.Cards = append(v.Cards, card{"segment", seg.String()})
	}
	if s := r.Segments; s != nil {
		v.Cards = append(v.Cards, card{"segments merged", fmt.Sprintf("%d of %d", len(s.Merged), s.Count)})
	}
	timeout := r.Config.Target.Timeout.D()
	for _, row := range []struct {
		name string
		h    *loadgen.Histogram
	}{{"response time", h.Response}, {"first response", h.FirstResponse}, {"inter-response", h.InterResponse},
		{"service time", h.Service}, {"send lag", h.SendLag}, {"failed (response)", h.Failed}} {
		if row.h == nil || (row.name != "response time" && row.name != "service time" && row.name != "send lag" && row.h.Count() == 0) {
			continue
		}
		lr := latRow{Name: row.name, Max: loadgen.FormatDuration(row.h.Max()), Mean: loadgen.FormatDuration(row.h.Mean()), Count: row.h.Count()}
		for _, q := range SummaryPercentiles {
			lr.Cells = append(lr.Cells, percentileCell(row.h, q, timeout, row.name != "send lag" && row.name != "inter-response"))
		}
		v.Lat = append(v.Lat, lr)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		er := errRow{Class: k, Count: r.Errors[k], Samples: r.ErrorSamples[k]}
		if r.Counts.Completed > 0 {
			er.Share = fmt.Sprintf("%.3g%%", 100*float64(er.Count)/float64(r.Counts.Completed))
		}
		v.Errors = append(v.Errors, er)
	}
	for j, s := range r.Steps {
		hh := s.Histograms.Response
		sr := stepRow{N: j + 1, Label: s.Label(), Start: fmt.Sprintf("%.1fs", s.Start), Rate: fmt.Sprintf("%.1f", s.Rates.Completed),
			P50: stepCell(hh, 50), P90: stepCell(hh, 90), PP: stepCell(hh, pct), Max: loadgen.FormatDuration(hh.Max()),
			Errors: s.Counts.Errors, Timeouts: s.Counts.Timeouts, Knee: j == v.Knee}
		var notes []string
		if s.Verdict != "" {
			n := s.Verdict
			if s.Why != "" {
				n += ": " + s.Why
			}
			notes = append(notes, n)
			sr.Bad = s.Verdict == "fails" || s.Verdict == "inconclusive"
		}
		for _, t := range s.Thresholds {
			if !t.Pass && s.Kind == loadgen.StepLevel {
				notes = append(notes, "FAIL "+t.Threshold+" ("+t.ActualStr+")")
				sr.Bad = true
			}
		}
		if s.GeneratorBound && s.Verdict == "" {
			notes = append(notes, "generator-bound")
		}
		if st := s.Stability; st != nil {
			if st.Converged {
				notes = append(notes, fmt.Sprintf("stable in %d windows", st.Windows))
			} else {
				notes = append(notes, "unstable: "+st.Reason)
			}
		}
		if j == v.Knee {
			notes = append(notes, "knee")
		}
		sr.Notes = strings.Join(notes, "; ")
		v.Steps = append(v.Steps, sr)
	}
	if sv := r.Server; sv != nil {
		v.Server = serverViewOf(sv, h.Service.Mean())
		if ss := sv.Stream; ss != nil {
			for _, x := range []struct {
				name   string
				server loadgen.ServerComponent
				client *loadgen.Histogram
			}{{"time to first response", ss.FirstResponse, h.FirstResponse}, {"inter-response gap", ss.InterResponse, h.InterResponse}} {
				if x.server.Count == 0 {
					continue
				}
				row := streamRow{Name: x.name, Server: loadgen.FormatDuration(x.server.Mean()), Count: x.server.Count}
				if x.client != nil && x.client.Count() > 0 {
					row.Client = loadgen.FormatDuration(x.client.Mean())
					row.Diff = fmt.Sprintf("%+.3f ms", float64(x.client.Mean()-x.server.Mean())/1e6)
				}
				v.Stream = append(v.Stream, row)
			}
		}
	}
	v.Gates = loadgen.GroupThresholds(r.Thresholds)
	cfg, _ := json.MarshalIndent(r.Config, "", "  ")
	v.Config = string(cfg)
	return v
}

var serverColors = []string{"#8250df", "#0969da", "#1a7f37", "#9a6700", "#bf3989", "#1b7c83"}

// serverViewOf lays the server's components and the remainder of the
// client-observed service time out as a stacked bar.
func serverViewOf(sv *loadgen.ServerBreakdown, clientMean time.Duration) *serverView {
	v := &serverView{Source: sv.Source, Requests: sv.Requests}
	var sum time.Duration
	for _, c := range sv.Components {
		sum += c.Mean()
	}
	total := max(clientMean, sum)
	for i, c := range sv.Components {
		p := serverPart{Name: c.Name, Mean: loadgen.FormatDuration(c.Mean()), Color: serverColors[i%len(serverColors)]}
		if total > 0 {
			p.Width = 100 * float64(c.Mean()) / float64(total)
		}
		v.Parts = append(v.Parts, p)
	}
	if clientMean > sum {
		v.Parts = append(v.Parts, serverPart{Name: "network and client", Mean: loadgen.FormatDuration(clientMean - sum), Color: "#d0d7de",
			Width: 100 * float64(clientMean-sum) / float64(total)})
	}
	return v
}

func ms(ns int64) htmlpage.Num { return htmlpage.Num(float64(ns) / 1e6) }

func msDur(d time.Duration) htmlpage.Num { return htmlpage.Num(float64(d) / 1e6) }

// latencyOverTime is the per-interval response-time chart of one run, with
// the sweep's levels marked.
func latencyOverTime(id string, r *loadgen.Result) htmlpage.Chart {
	c := htmlpage.Chart{ID: id, X: htmlpage.Axis{Label: "time (s)", Unit: htmlpage.UnitSeconds, FromZero: true},
		Y: htmlpage.Axis{Label: "response time", Unit: htmlpage.UnitMillis, Log: true}}
	var p50, p90, p99, mx, lag []htmlpage.Num
	nz := func(n htmlpage.Num) htmlpage.Num {
		if n <= 0 {
			return htmlpage.Gap // no value on a log axis
		}
		return n
	}
	ivs := chartIntervals(r)
	for i, iv := range ivs {
		if gap := levelGap(ivs, i); gap > 0 {
			c.XValues = append(c.XValues, htmlpage.Num(gap))
			for _, s := range []*[]htmlpage.Num{&p50, &p90, &p99, &mx, &lag} {
				*s = append(*s, htmlpage.Gap)
			}
		}
		c.XValues = append(c.XValues, htmlpage.Num(iv.Start+iv.Length))
		p90v := iv.ResponseP90
		p50 = append(p50, nz(ms(iv.ResponseP50)))
		if p90v == 0 && iv.ResponseP50 > 0 { // results written before p90 was kept
			p90 = append(p90, htmlpage.Gap)
		} else {
			p90 = append(p90, nz(ms(p90v)))
		}
		p99 = append(p99, nz(ms(iv.ResponseP99)))
		mx = append(mx, nz(ms(iv.ResponseMax)))
		lag = append(lag, nz(ms(iv.SendLagP99)))
	}
	c.Series = []htmlpage.Series{{Label: "p50", Y: p50}, {Label: "p90", Y: p90}, {Label: "p99", Y: p99}, {Label: "max", Y: mx}}
	if r.OpenLoop() { // a closed loop sends when it means to: no lag
		c.Series = append(c.Series, htmlpage.Series{Label: "send-lag p99", Y: lag, Style: "dashed", Color: "#6e7781"})
	}
	c.Lines = stepLines(r)
	c.Lines = append(c.Lines, latencyGateLines(r)...)
	return c
}

// trafficOverTime is the per-interval throughput and failures of one run.
func trafficOverTime(id string, r *loadgen.Result) htmlpage.Chart {
	c := htmlpage.Chart{ID: id, Height: 220, X: htmlpage.Axis{Label: "time (s)", Unit: htmlpage.UnitSeconds, FromZero: true},
		Y:  htmlpage.Axis{Label: "requests/s", Unit: htmlpage.UnitRate},
		Y2: &htmlpage.Axis{Label: "failed requests", Unit: htmlpage.UnitCount}}
	var rate, req, failed []htmlpage.Num
	anyReq := false
	ivs := chartIntervals(r)
	for i, iv := range ivs {
		if gap := levelGap(ivs, i); gap > 0 {
			c.XValues = append(c.XValues, htmlpage.Num(gap))
			for _, s := range []*[]htmlpage.Num{&rate, &req, &failed} {
				*s = append(*s, htmlpage.Gap)
			}
		}
		c.XValues = append(c.XValues, htmlpage.Num(iv.Start+iv.Length))
		rate = append(rate, htmlpage.Num(iv.Rate))
		if iv.RequestedRate > 0 {
			anyReq = true
			req = append(req, htmlpage.Num(iv.RequestedRate))
		} else {
			req = append(req, htmlpage.Gap)
		}
		failed = append(failed, htmlpage.Num(iv.Errors+iv.Timeouts))
	}
	c.Series = []htmlpage.Series{{Label: "completed/s", Y: rate}}
	if anyReq {
		c.Series = append(c.Series, htmlpage.Series{Label: "requested/s", Y: req, Style: "dashed", Color: "#6e7781"})
	}
	c.Series = append(c.Series, htmlpage.Series{Label: "errors + timeouts", Y: failed, Axis: 2, Style: "bars", Color: "#cf222e"})
	c.Lines = stepLines(r)
	return c
}

// chartIntervals are the intervals a time chart shows: all but a sliver at
// the end of a run or level shorter than half an interval, which results
// written before the last interval absorbed the drain hold (its rate and
// percentiles rest on a few requests).
func chartIntervals(r *loadgen.Result) []loadgen.IntervalStats {
	half := r.Config.Load.Interval.D().Seconds() / 2
	var out []loadgen.IntervalStats
	for i, iv := range r.Intervals {
		last := i == len(r.Intervals)-1 || r.Intervals[i+1].Step != iv.Step
		if last && iv.Length < half && i > 0 && r.Intervals[i-1].Step == iv.Step {
			continue
		}
		out = append(out, iv)
	}
	return out
}

// levelGap is where to break the lines of a time chart before interval i,
// which starts a new sweep level or search probe (each one is a run of its
// own, with a warm-up in between); 0 for none.
func levelGap(ivs []loadgen.IntervalStats, i int) float64 {
	if i == 0 || ivs[i].Step == ivs[i-1].Step {
		return 0
	}
	prevEnd := ivs[i-1].Start + ivs[i-1].Length
	return max(prevEnd+1e-6, (prevEnd+ivs[i].Start)/2)
}

// stepLines marks where each sweep level or search probe began.
func stepLines(r *loadgen.Result) []htmlpage.Line {
	if len(r.Steps) < 2 || r.Steps[0].Kind == loadgen.StepProfile {
		return nil
	}
	var out []htmlpage.Line
	for _, s := range r.Steps {
		out = append(out, htmlpage.Line{Axis: "x", Value: s.Start, Label: s.Label(), Color: "#afb8c1"})
	}
	return out
}

// latencyGateLines draws the latency bounds of the SLO and thresholds.
func latencyGateLines(r *loadgen.Result) []htmlpage.Line {
	var out []htmlpage.Line
	add := func(ts []loadgen.Threshold, what string) {
		for _, t := range ts {
			if bound, ok := t.ResponseTimeBound(); ok {
				out = append(out, htmlpage.Line{Axis: "y", Value: float64(bound) / 1e6, Label: what + " " + t.Text, Color: "#cf222e"})
			}
		}
	}
	add(r.Config.SLO, "SLO")
	add(r.Config.Thresholds, "threshold")
	return out
}

// spectrumPoints are the x values (1/(1−p)) of a spectrum up to n samples:
// ten per decade, from p0 to the last percentile n samples can tell.
func spectrumPoints(n int64) []float64 {
	var xs []float64
	for k := 0; ; k++ {
		x := math.Pow(10, float64(k)/10)
		if x > float64(n) || k > 80 {
			break
		}
		xs = append(xs, x)
	}
	return xs
}

// spectrumChart overlays the response-time spectra of rs (with service
// time dashed when service is set).
func spectrumChart(id string, rs []*loadgen.Result, labels []string, service bool) htmlpage.Chart {
	var hs []*loadgen.Histogram
	for _, r := range rs {
		hs = append(hs, r.Histograms.Response)
	}
	xs := spectrumXs(hs...)
	c := spectrumAxes(id, xs)
	for i, r := range rs {
		label := "response time"
		if labels != nil {
			label = labels[i]
		}
		c.Series = append(c.Series, htmlpage.Series{Label: label, Y: spectrumValues(r.Histograms.Response, xs)})
		if service && r.OpenLoop() { // a closed loop's service time is its response time
			c.Series = append(c.Series, htmlpage.Series{Label: "service time", Y: spectrumValues(r.Histograms.Service, xs), Style: "dashed"})
		}
	}
	if len(rs) == 1 {
		c.Lines = latencyGateLines(rs[0])
	}
	return c
}

// streaming reports whether r recorded streamed responses.
func streaming(r *loadgen.Result) bool {
	h := r.Histograms.FirstResponse
	return h != nil && h.Count() > 0
}

func anyStreaming(rs []*loadgen.Result) bool {
	for _, r := range rs {
		if streaming(r) {
			return true
		}
	}
	return false
}

// spectrumXs are the spectrum's x values for histograms of up to n values.
func spectrumXs(hs ...*loadgen.Histogram) []float64 {
	var n int64
	for _, h := range hs {
		if h != nil {
			n = max(n, h.Count())
		}
	}
	return spectrumPoints(max(n, 1))
}

// spectrumValues are h's values at xs (HdrHistogram's 1/(1−p) axis), gaps
// where h has too few values.
func spectrumValues(h *loadgen.Histogram, xs []float64) []htmlpage.Num {
	var out []htmlpage.Num
	for _, x := range xs {
		if h == nil || h.Count() == 0 || x > float64(h.Count()) {
			out = append(out, htmlpage.Gap)
			continue
		}
		v := h.Quantile(100 * (1 - 1/x))
		if x == 1 {
			v = h.Min()
		}
		if v <= 0 {
			out = append(out, htmlpage.Gap)
			continue
		}
		out = append(out, msDur(v))
	}
	return out
}

func spectrumAxes(id string, xs []float64) htmlpage.Chart {
	c := htmlpage.Chart{ID: id, X: htmlpage.Axis{Label: "percentile", Unit: htmlpage.UnitPercentile, Log: true},
		Y: htmlpage.Axis{Label: "latency", Unit: htmlpage.UnitMillis, Log: true}}
	for _, x := range xs {
		c.XValues = append(c.XValues, htmlpage.Num(x))
	}
	return c
}

// streamSpectrum is one streaming run's time-to-first-response and
// inter-response-gap spectra.
func streamSpectrum(id string, r *loadgen.Result) htmlpage.Chart {
	h := r.Histograms
	xs := spectrumXs(h.FirstResponse, h.InterResponse)
	c := spectrumAxes(id, xs)
	c.Series = []htmlpage.Series{
		{Label: "time to first response", Y: spectrumValues(h.FirstResponse, xs)},
		{Label: "inter-response gap", Y: spectrumValues(h.InterResponse, xs), Style: "dashed"},
	}
	return c
}

// histogramSpectrum overlays one histogram (pick) of every run; a run that
// did not record it keeps its place (and so its colour) with an empty
// series.
func histogramSpectrum(id string, rs []*loadgen.Result, labels []string, pick func(*loadgen.Histograms) *loadgen.Histogram) htmlpage.Chart {
	var hs []*loadgen.Histogram
	for _, r := range rs {
		hs = append(hs, pick(&r.Histograms))
	}
	xs := spectrumXs(hs...)
	c := spectrumAxes(id, xs)
	for i, h := range hs {
		label := labels[i]
		if h == nil || h.Count() == 0 {
			label += " (no streamed responses)"
		}
		c.Series = append(c.Series, htmlpage.Series{Label: label, Y: spectrumValues(h, xs)})
	}
	return c
}

// p99OverTime overlays the runs' per-interval p99, each from its start.
func p99OverTime(id string, rs []*loadgen.Result, labels []string) htmlpage.Chart {
	c := htmlpage.Chart{ID: id, Mode: "xy", X: htmlpage.Axis{Label: "time since the run's start (s)", Unit: htmlpage.UnitSeconds},
		Y: htmlpage.Axis{Label: "response-time p99", Unit: htmlpage.UnitMillis, Log: true}}
	for i, r := range rs {
		s := htmlpage.Series{Label: labels[i]}
		for _, iv := range chartIntervals(r) {
			if iv.ResponseP99 <= 0 {
				continue
			}
			s.X = append(s.X, htmlpage.Num(iv.Start+iv.Length))
			s.Y = append(s.Y, ms(iv.ResponseP99))
		}
		if len(s.X) > 0 { // a run without a successful request has no line
			c.Series = append(c.Series, s)
		}
	}
	return c
}

// curveChart plots latency against completed throughput, one point per
// step: p50 and the chosen percentile for one result, the chosen
// percentile per result for several; with the knee and SLO lines.
func curveChart(id string, rs []*loadgen.Result, labels []string) htmlpage.Chart {
	c := htmlpage.Chart{ID: id, Mode: "xy", X: htmlpage.Axis{Label: "completed requests/s", Unit: htmlpage.UnitRate},
		Y: htmlpage.Axis{Label: "response time", Unit: htmlpage.UnitMillis, Log: true}}
	for i, r := range rs {
		pct := r.Config.Percentile
		if pct == 0 {
			pct = loadgen.DefaultPercentile
		}
		steps := slices.Clone(r.Steps)
		if len(steps) > 0 && steps[0].Kind == loadgen.StepProbe {
			steps = slices.DeleteFunc(steps, func(s loadgen.Step) bool { return s.Verdict == "calibration" })
			slices.SortStableFunc(steps, func(a, b loadgen.Step) int {
				return cmpFloat(a.Rate+float64(a.Concurrency), b.Rate+float64(b.Concurrency))
			})
		}
		series := func(label string, q float64, style string) htmlpage.Series {
			s := htmlpage.Series{Label: label, Style: style}
			for _, st := range steps {
				h := st.Histograms.Response
				if h.Count() == 0 {
					continue
				}
				s.X = append(s.X, htmlpage.Num(st.Rates.Completed))
				s.Y = append(s.Y, msDur(h.Quantile(q)))
			}
			return s
		}
		pname := "p" + loadgen.FormatPercentile(pct)
		if labels == nil {
			c.Series = append(c.Series, series("p50", 50, ""), series(pname, pct, ""))
			c.Series = slices.DeleteFunc(c.Series, func(s htmlpage.Series) bool { return len(s.X) == 0 })
			if k := loadgen.Knee(r.Steps); k >= 0 {
				s := r.Steps[k]
				c.Points = append(c.Points, htmlpage.Point{X: s.Rates.Completed, Y: float64(s.Histograms.Response.Quantile(pct)) / 1e6,
					Label: "knee: " + s.Label()})
			}
			c.Lines = latencyGateLines(r)
		} else if s := series(labels[i]+" "+pname, pct, ""); len(s.X) > 0 {
			c.Series = append(c.Series, s)
		}
	}
	return c
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pageTemplate is parsed at first use, not at init: every oipkit command
// links this package and few render HTML.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"dur":       func(d loadgen.Duration) string { return round(d.D()).String() },
		"pct":       func(f float64) string { return loadgen.FormatPercentile(f) },
		"percent":   func(f float64) string { return loadgen.FormatPercent(f) },
		"est":       describeEstimate,
		"status":    func(s verdict.Status) string { return string(s) },
		"upper":     func(s verdict.Status) string { return strings.ToUpper(string(s)) },
		"loadOf":    func(r *loadgen.Result) string { return loadgen.DescribeLoad(r.Config) },
		"server":    loadgen.ServerOf,
		"time":      func(t time.Time) string { return t.Format(time.RFC3339) },
		"cpu":       func(c float64) string { return fmt.Sprintf("%.0f%%", 100*c) },
		"ns":        func(v int64) string { return loadgen.FormatDuration(time.Duration(v)) },
		"width":     func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
		"percentOf": func(f float64) float64 { return 100 * f },
		"target": func(r *loadgen.Result) string {
			if r.Config.Target.HTTP != "" {
				return r.Config.Target.HTTP
			}
			return r.Config.Target.GRPC
		},
	}).Parse(pageTemplateText))
})

// pageTemplateText is the page's template: Go html/template text, kept in
// its own file so that it reads (and diffs) as HTML.
//
//go:embed report.html.tmpl
var pageTemplateText string
