package render

import (
	"fmt"
	"strings"

	"github.com/oipkit/oipkit/loadgen"
)

// A Format is a named rendering of one result, as oipkit load and oipkit
// report print it on request. The names are defined here only.
type Format struct {
	Name string
	Doc  string
	New  func(*loadgen.Result) Reporter
}

// Formats lists every format, the default first.
var Formats = []Format{
	{"text", "a human summary", NewTextReporter},
	{"json", "the result record, as saved for oipkit report", NewJSONReporter},
	{"csv", "one row per interval", NewIntervalCSVReporter},
	{"summary-csv", "perf_analyzer-style rows: one per level, probe or step, else one", NewSummaryCSVReporter},
	{"hgrm", "the response-time percentile spectrum (HdrHistogram .hgrm)", NewPercentilesReporter},
	{"html", "a self-contained HTML page with plots", NewHTMLReporter},
}

// FormatNames lists the format names: "text, json, csv, summary-csv, hgrm or html".
func FormatNames() string {
	var names []string
	for _, f := range Formats {
		names = append(names, f.Name)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// FormatNamed returns the format called name.
func FormatNamed(name string) (Format, error) {
	for _, f := range Formats {
		if f.Name == name {
			return f, nil
		}
	}
	return Format{}, fmt.Errorf("unknown format %q: want %s", name, FormatNames())
}
