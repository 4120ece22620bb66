package htmlpage

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"sync"
)

var (
	//go:embed assets/uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uplot/uPlot.min.css
	uplotCSS string
	// UPlotLicense is uPlot's MIT licence, reproduced in every page.
	//go:embed assets/uplot/LICENSE
	UPlotLicense string
	//go:embed page.css
	pageCSS string
	//go:embed charts.js
	chartsJS string
)

// A Page is one self-contained HTML document.
type Page struct {
	Title string
	// Body is the page's content, rendered by the caller (escape what
	// comes from outside, e.g. with html/template). Charts are drawn into
	// its elements whose id is a chart's ID: use [ChartBox].
	Body template.HTML
	// Charts are drawn by charts.js after the page loaded.
	Charts []Chart
	// Generator names the program in the footer, e.g. "oipkit 0.1.0".
	Generator string
	// Style is CSS added after the shared stylesheet (a page's own rules).
	Style template.CSS
}

// A Chart is a plot, described as data. In "aligned" mode every series
// shares XValues; in "xy" mode each series has its own X (a curve such
// as latency against throughput).
type Chart struct {
	ID      string   `json:"id"`
	Mode    string   `json:"mode"` // "aligned" (default) or "xy"
	X       Axis     `json:"x"`
	Y       Axis     `json:"y"`
	Y2      *Axis    `json:"y2,omitempty"`
	XValues []Num    `json:"xValues,omitempty"`
	Series  []Series `json:"series"`
	Lines   []Line   `json:"lines,omitempty"`
	Points  []Point  `json:"points,omitempty"`
	Height  int      `json:"height,omitempty"`
}

// Axis units; values are given in these units.
const (
	UnitMillis     = "ms"    // latency in milliseconds
	UnitSeconds    = "s"     // time in seconds
	UnitRate       = "rps"   // requests per second
	UnitCount      = "count" // a count
	UnitPercentile = "pct"   // 1/(1−p), HdrHistogram's percentile axis (log)
)

// An Axis is a chart axis.
type Axis struct {
	Label string `json:"label"`
	Unit  string `json:"unit,omitempty"`
	Log   bool   `json:"log,omitempty"`
	// FromZero starts a linear axis at zero (a time axis).
	FromZero bool `json:"fromZero,omitempty"`
}

// A Series is one line, dashed line, set of bars or points.
type Series struct {
	Label string `json:"label"`
	X     []Num  `json:"x,omitempty"` // "xy" mode only
	Y     []Num  `json:"y"`
	Axis  int    `json:"axis,omitempty"`  // 2 for the right-hand axis
	Style string `json:"style,omitempty"` // "line" (default), "dashed", "bars", "points"
	Color string `json:"color,omitempty"`
}

// A Line is a reference line across the plot: Axis "y" is horizontal at
// Value (an SLO bound), "x" vertical (the start of a sweep level).
type Line struct {
	Axis  string  `json:"axis"`
	Value float64 `json:"value"`
	Label string  `json:"label,omitempty"`
	Color string  `json:"color,omitempty"`
	Scale string  `json:"scale,omitempty"` // "y2" for the right-hand axis
}

// A Point is a labelled, circled point (the knee of a curve).
type Point struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Label string  `json:"label,omitempty"`
	Color string  `json:"color,omitempty"`
}

// Num is a chart value; NaN (a gap) is written as null.
type Num float64

// MarshalJSON writes n, or null for NaN and infinities.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// Gap is a missing value.
var Gap = Num(math.NaN())

// ChartBox returns the placeholder of a chart: its title, the element the
// plot is drawn into, and a note under it.
func ChartBox(id, title, note string) template.HTML {
	return template.HTML(fmt.Sprintf(`<div class="chart" id="%s"><div class="title">%s</div><div class="plot"></div>%s</div>`,
		template.HTMLEscapeString(id), template.HTMLEscapeString(title), noteHTML(note)))
}

func noteHTML(note string) string {
	if note == "" {
		return ""
	}
	return `<div class="note">` + template.HTMLEscapeString(note) + `</div>`
}

// page is parsed at first use, not at init: every oipkit command links
// this package and few render HTML.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="{{.Generator}}">
<title>{{.Title}}</title>
{{- if .HasCharts}}
<style>{{.UPlotCSS}}</style>
{{- end}}
<style>{{.PageCSS}}</style>
{{- if .Style}}
<style>{{.Style}}</style>
{{- end}}
</head>
<body>
<main>
{{.Body}}
<footer>Written by {{.Generator}}. One self-contained file: it opens offline.
{{- if .HasCharts}} Charts drawn with
<a href="https://github.com/leeoniya/uPlot">uPlot</a> 1.6.32, embedded under its licence:
<details><summary>uPlot licence (MIT)</summary><pre>{{.License}}</pre></details>{{end}}</footer>
</main>
{{- if .HasCharts}}
<script id="oipkit-charts" type="application/json">{{.ChartsJSON}}</script>
<script>{{.UPlotJS}}</script>
<script>{{.ChartsJS}}</script>
{{- end}}
</body>
</html>
`))
})

// Write renders p as one HTML document. A page without charts carries
// neither uPlot nor charts.js.
func Write(w io.Writer, p Page) error {
	charts := p.Charts
	if charts == nil {
		charts = []Chart{}
	}
	for i := range charts {
		if charts[i].Mode == "" {
			charts[i].Mode = "aligned"
		}
	}
	js, err := json.Marshal(charts) // escapes <, > and &: safe inside <script>
	if err != nil {
		return fmt.Errorf("html page: charts: %w", err)
	}
	return page().Execute(w, map[string]any{
		"Title":      p.Title,
		"Generator":  p.Generator,
		"HasCharts":  len(charts) > 0,
		"Style":      p.Style,
		"Body":       p.Body,
		"License":    UPlotLicense,
		"ChartsJSON": template.JS(js),
		"UPlotJS":    template.JS(uplotJS),
		"ChartsJS":   template.JS(chartsJS),
		"UPlotCSS":   template.CSS(uplotCSS),
		"PageCSS":    template.CSS(pageCSS),
	})
}
