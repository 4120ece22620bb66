package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/oipkit/oipkit/htmlpage"
	"github.com/oipkit/oipkit/htmlpage/browser"
)

// write writes the soak's files into dir: soak.json, samples.csv, soak.md,
// soak.html and, when chromium is there, soak.png.
func write(ctx context.Context, dir string, r *result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	var html bytes.Buffer
	if err := writeHTML(&html, r); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"soak.json":   append(js, '\n'),
		"samples.csv": samplesCSV(r.Samples),
		"soak.md":     []byte(markdown(r)),
		"soak.html":   html.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	page, shot := filepath.Join(dir, "soak.html"), filepath.Join(dir, "soak.png")
	rep, err := browser.Check(ctx, page, shot, browser.Options{Width: 1280, Height: 900})
	switch {
	case errors.Is(err, browser.ErrNoBrowser):
		fmt.Printf("soak: no screenshot of %s: %v\n", page, err)
		return nil
	case err != nil:
		return fmt.Errorf("screenshot of %s: %w", page, err)
	case len(rep.Problems) > 0 || rep.Charts < 3:
		return fmt.Errorf("%s in chromium: %d charts drawn, problems %q", page, rep.Charts, rep.Problems)
	}
	fmt.Printf("soak: wrote %s (samples.csv, soak.json, soak.md, soak.html, soak.png)\n", dir)
	return nil
}

func samplesCSV(samples []Sample) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"t_s", "rss_bytes", "heap_inuse_bytes", "heap_objects", "goroutines", "open_files", "threads", "requests"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, s := range samples {
		w.Write([]string{f(s.T), f(s.RSS), f(s.HeapInuse), f(s.HeapObj), f(s.Goroutines), f(s.Files), f(s.Threads), f(s.Requests)})
	}
	w.Flush()
	return b.Bytes()
}

func verdictWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func markdown(r *result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak of the reference server: %s\n\n", verdictWord(r.Pass))
	fmt.Fprintf(&b, "oipkit %s, started %s, %s of mixed load, sampled every %s; the trend is fitted after a warm-up of %s. "+
		"Written by `cmd/soak` (`make soak`); the plot is `soak.html` (`soak.png`), the samples `samples.csv` and `soak.json`.\n\n",
		r.Version, r.Started.Format(time.RFC3339), dur(r.Duration), dur(r.Interval), dur(r.Warmup))
	fmt.Fprintf(&b, "Server: `%s`\n\n", r.Server)
	b.WriteString("## Series\n\n| series | verdict | slope per hour | fitted rise after the warm-up | warm-up median | last quarter's median | bound |\n|---|---|---|---|---|---|---|\n")
	for _, v := range r.Verdicts {
		state := verdictWord(v.Pass)
		if !v.Judged {
			state = "reported"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s ± %s | %s | %s | %s |\n", v.Series, state, format(v.SlopePerHour, v.Unit),
			format(v.Rise, v.Unit), format(v.RiseError, v.Unit), format(v.WarmupMedian, v.Unit), format(v.LateMedian, v.Unit), v.Bound)
	}
	if len(r.Samples) > 0 {
		first, last := r.Samples[0], r.Samples[len(r.Samples)-1]
		fmt.Fprintf(&b, "\nFirst and last sample: RSS %s → %s, heap in use %s → %s, goroutines %.0f → %.0f, open files %.0f → %.0f, threads %.0f → %.0f.\n",
			format(first.RSS, "bytes"), format(last.RSS, "bytes"), format(first.HeapInuse, "bytes"), format(last.HeapInuse, "bytes"),
			first.Goroutines, last.Goroutines, first.Files, last.Files, first.Threads, last.Threads)
	}
	b.WriteString("\n## Workloads\n\n| workload | requests | expected errors | errors | what |\n|---|---|---|---|---|\n")
	var total, errs uint64
	for _, w := range r.Workloads {
		total += w.Requests
		errs += w.Errors
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s, one step every %s |\n", w.Name, w.Requests, w.Expected, w.Errors, w.What, w.Every)
	}
	fmt.Fprintf(&b, "| all | %d (%.0f/s) | | %d | |\n", total, float64(total)/max(r.Duration, 1), errs)
	for _, w := range r.Workloads {
		for _, e := range w.First {
			fmt.Fprintf(&b, "\n- %s: `%s`", w.Name, e)
		}
	}
	if len(r.Problems) > 0 {
		b.WriteString("\n## Problems\n\n")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	b.WriteString("\n## Bounds\n\n" + boundsText + "\n")
	return b.String()
}

// boundsText states the rules of verdict.go for the reports.
const boundsText = "After the warm-up (the first 20% of the run, at least 30 s) a least-squares line is fitted to each series. " +
	"`rss` fails when its slope exceeds max(10% of its level, 20 MiB) per hour and the fitted rise over the window exceeds " +
	"max(4 × its standard error, 8 MiB); `heap_inuse` likewise with max(10%, 10 MiB) per hour and 4 MiB. `goroutines` fails when the " +
	"median of the last quarter of the samples exceeds the warm-up's median + 20, `open_files` + 10. `threads` and " +
	"`heap_objects` are reported, not judged. Any request failing other than as its workload expects fails the soak."

func dur(s float64) string { return (time.Duration(s) * time.Second).String() }

func writeHTML(w *bytes.Buffer, r *result) error {
	xs := make([]htmlpage.Num, len(r.Samples))
	col := func(of func(Sample) float64, scale float64) []htmlpage.Num {
		out := make([]htmlpage.Num, len(r.Samples))
		for i, s := range r.Samples {
			out[i] = htmlpage.Num(of(s) / scale)
		}
		return out
	}
	for i, s := range r.Samples {
		xs[i] = htmlpage.Num(s.T / 60)
	}
	rate := make([]htmlpage.Num, len(r.Samples))
	for i := range r.Samples {
		rate[i] = htmlpage.Gap
		if i > 0 && r.Samples[i].T > r.Samples[i-1].T {
			rate[i] = htmlpage.Num((r.Samples[i].Requests - r.Samples[i-1].Requests) / (r.Samples[i].T - r.Samples[i-1].T))
		}
	}
	// fitted draws a judged trend's line over the measured window, dashed.
	fitted := func(series string, scale float64) htmlpage.Series {
		out := make([]htmlpage.Num, len(r.Samples))
		for i, s := range r.Samples {
			out[i] = htmlpage.Gap
			for _, v := range r.Verdicts {
				if v.Series == series && s.T >= r.Warmup && len(r.Samples) > 0 {
					t0 := firstAfter(r.Samples, r.Warmup)
					out[i] = htmlpage.Num((v.Level + v.SlopePerHour/3600*(s.T-t0)) / scale)
				}
			}
		}
		return htmlpage.Series{Label: series + " fit", Y: out, Style: "dashed", Color: "#6e7781"}
	}
	warm := []htmlpage.Line{{Axis: "x", Value: r.Warmup / 60, Label: "end of warm-up", Color: "#6e7781"}}
	minutes := htmlpage.Axis{Label: "minutes", FromZero: true}
	const mib = 1 << 20
	charts := []htmlpage.Chart{
		{ID: "memory", X: minutes, Y: htmlpage.Axis{Label: "MiB"}, XValues: xs, Lines: warm, Series: []htmlpage.Series{
			{Label: "RSS", Y: col(func(s Sample) float64 { return s.RSS }, mib)},
			fitted("rss", mib),
			{Label: "Go heap in use", Y: col(func(s Sample) float64 { return s.HeapInuse }, mib)},
			fitted("heap_inuse", mib),
		}},
		{ID: "counts", X: minutes, Y: htmlpage.Axis{Label: "count", Unit: htmlpage.UnitCount}, XValues: xs, Lines: warm, Series: []htmlpage.Series{
			{Label: "goroutines", Y: col(func(s Sample) float64 { return s.Goroutines }, 1)},
			{Label: "open files", Y: col(func(s Sample) float64 { return s.Files }, 1)},
			{Label: "threads", Y: col(func(s Sample) float64 { return s.Threads }, 1)},
		}},
		{ID: "objects", X: minutes, Y: htmlpage.Axis{Label: "heap objects", Unit: htmlpage.UnitCount}, XValues: xs, Lines: warm,
			Y2: &htmlpage.Axis{Label: "requests/s", Unit: htmlpage.UnitRate},
			Series: []htmlpage.Series{
				{Label: "Go heap objects", Y: col(func(s Sample) float64 { return s.HeapObj }, 1)},
				{Label: "requests/s", Y: rate, Axis: 2, Style: "dashed"},
			}},
	}
	var body bytes.Buffer
	if err := pageBody.Execute(&body, map[string]any{
		"R": r, "Verdict": verdictWord(r.Pass), "Duration": dur(r.Duration), "Interval": dur(r.Interval), "Warmup": dur(r.Warmup),
		"Memory": htmlpage.ChartBox("memory", "Memory of the server process",
			"RSS (VmRSS) and the Go heap in use (go_memstats_heap_inuse_bytes); dashed: the least-squares fit after the warm-up."),
		"Counts":  htmlpage.ChartBox("counts", "Goroutines, open files and threads", "go_goroutines, /proc/<pid>/fd entries and Threads of /proc/<pid>/status."),
		"Objects": htmlpage.ChartBox("objects", "Heap objects and load", "go_memstats_heap_objects; dashed, right axis: requests sent per second, every workload."),
		"Bounds":  boundsText,
		"Fmt":     format,
	}); err != nil {
		return fmt.Errorf("soak.html: %w", err)
	}
	return htmlpage.Write(w, htmlpage.Page{Title: "Soak of the reference server: " + verdictWord(r.Pass),
		Body: template.HTML(body.String()), Charts: charts, Generator: "oipkit " + r.Version})
}

// firstAfter is the time of the first sample at or after t.
func firstAfter(samples []Sample, t float64) float64 {
	for _, s := range samples {
		if s.T >= t {
			return s.T
		}
	}
	return t
}

var pageBody = template.Must(template.New("body").Funcs(template.FuncMap{"fmt": format}).Parse(`<header class="page">
<h1>Soak of the reference server <span class="badge {{if .R.Pass}}pass{{else}}failed{{end}}">{{.Verdict}}</span></h1>
<div class="sub">oipkit {{.R.Version}}, started {{.R.Started.Format "2006-01-02 15:04 UTC"}}: {{.Duration}} of mixed load, sampled every {{.Interval}}, warm-up {{.Warmup}}.</div>
</header>
<table>
<tr><th class="l">series</th><th>verdict</th><th>slope per hour</th><th>fitted rise</th><th>warm-up median</th><th>last quarter's median</th><th class="l">bound</th></tr>
{{range .R.Verdicts}}<tr{{if not .Pass}} class="bad"{{end}}><td class="l">{{.Series}}</td><td>{{if not .Judged}}reported{{else if .Pass}}pass{{else}}FAIL{{end}}</td><td>{{fmt .SlopePerHour .Unit}}</td><td>{{fmt .Rise .Unit}} ± {{fmt .RiseError .Unit}}</td><td>{{fmt .WarmupMedian .Unit}}</td><td>{{fmt .LateMedian .Unit}}</td><td class="l">{{.Bound}}</td></tr>
{{end}}</table>
{{if .R.Problems}}<ul class="reasons">{{range .R.Problems}}<li class="bad">{{.}}</li>{{end}}</ul>{{end}}
{{.Memory}}
{{.Counts}}
{{.Objects}}
<h2>Workloads</h2>
<table>
<tr><th class="l">workload</th><th>requests</th><th>expected errors</th><th>errors</th><th class="l">what</th></tr>
{{range .R.Workloads}}<tr{{if .Errors}} class="bad"{{end}}><td class="l">{{.Name}}</td><td>{{.Requests}}</td><td>{{.Expected}}</td><td>{{.Errors}}</td><td class="l">{{.What}}, every {{.Every}}</td></tr>
{{end}}</table>
<h2>Bounds</h2>
<p>{{.Bounds}}</p>
<p>Server: <code>{{.R.Server}}</code></p>
`))
