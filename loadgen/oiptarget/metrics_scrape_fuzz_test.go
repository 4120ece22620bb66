package oiptarget

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// sampleKey is a sample as a comparable string: name, labels sorted (a
// label with an empty value is an absent one, in Prometheus and in
// metricSample.label) and the value's bits (NaN as one value).
func sampleKey(name string, labels [][2]string, v float64) string {
	labels = slices.DeleteFunc(slices.Clone(labels), func(l [2]string) bool { return l[1] == "" })
	slices.SortFunc(labels, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	bits := math.Float64bits(v)
	if math.IsNaN(v) {
		bits = 0
	}
	return fmt.Sprintf("%q %q %x", name, labels, bits)
}

// valueAfterBrace finds a closing brace with no blank after it.
var valueAfterBrace = regexp.MustCompile(`}[^ \t\n]`)

// nameInBraces finds a line that starts with a brace.
var nameInBraces = regexp.MustCompile(`(?m)^[ \t]*\{`)

// FuzzParseMetricsExpfmt compares parseMetrics with the Prometheus text
// parser (github.com/prometheus/common/expfmt, legacy names): whatever it
// accepts, parseMetrics must accept too, to the same counter, gauge and
// untyped samples (histograms and summaries, which expfmt folds into one
// metric, are left out of the comparison). parseMetrics reads a subset
// leniently, so it may accept more.
func FuzzParseMetricsExpfmt(f *testing.F) {
	f.Add([]byte(fmt.Sprintf(tritonMetrics, 1, 2, 3, 4, 5, 6, 7.5, 8)))
	f.Add([]byte("# a comment\n\n" + `m_total{a="x\"y\\z\nw", b = "2" ,} 3.5` + "\nplain 7 123\n" + `inf{le="+Inf"} +Inf` + "\nnan NaN\n"))
	f.Add([]byte("# HELP g A gauge.\n# TYPE g gauge\ng{x=\"\"} -1e-3\ng{x=\"a\"} 2\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"))
	f.Add([]byte("\t m\t{ a = \"1\" }\t 4 -5\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if valueAfterBrace.Match(b) || nameInBraces.Match(b) {
			// parseMetrics refuses m{a="b"}1 on purpose (TestParseMetrics),
			// and the newer syntax of a name inside the braces, {"m"} 1,
			// which expfmt takes in forms it should not ({A0""} 1 as A0).
			return
		}
		families, err := expfmtParse(b)
		if err != nil {
			return
		}
		got, err := parseMetrics(b)
		if err != nil {
			t.Fatalf("%q: parseMetrics refuses (%v) what expfmt reads as %v", b, err, families)
		}
		folded := map[string]bool{} // sample names of histograms and summaries
		var want []string
		for name, mf := range families {
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY, dto.MetricType_GAUGE_HISTOGRAM:
				for _, s := range []string{"", "_bucket", "_sum", "_count"} {
					folded[name+s] = true
				}
				continue
			}
			for _, m := range mf.GetMetric() {
				var labels [][2]string
				for _, l := range m.GetLabel() {
					labels = append(labels, [2]string{l.GetName(), l.GetValue()})
				}
				var v float64
				switch {
				case m.Counter != nil:
					v = m.GetCounter().GetValue()
				case m.Gauge != nil:
					v = m.GetGauge().GetValue()
				default:
					v = m.GetUntyped().GetValue()
				}
				want = append(want, sampleKey(name, labels, v))
			}
		}
		var have []string
		for _, s := range got {
			if folded[s.name] {
				continue
			}
			var labels [][2]string
			for _, l := range s.labels {
				labels = append(labels, [2]string{l.name, l.value})
			}
			have = append(have, sampleKey(s.name, labels, s.value))
		}
		slices.Sort(want)
		slices.Sort(have)
		if !slices.Equal(have, want) {
			t.Fatalf("%q: parseMetrics read\n%s\nexpfmt\n%s", b, strings.Join(have, "\n"), strings.Join(want, "\n"))
		}
	})
}

// expfmtParse is expfmt's reading of b; its panics are refusals (v0.71.0
// dereferences nil on a line "{}" in some states: the seed
// expfmt-panics-on-braces).
func expfmtParse(b []byte) (families map[string]*dto.MetricFamily, err error) {
	defer func() {
		if r := recover(); r != nil {
			families, err = nil, fmt.Errorf("expfmt panicked: %v", r)
		}
	}()
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(bytes.NewReader(b))
}
