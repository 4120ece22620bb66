package htmlpage

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestWriteIsSelfContainedAndEscaped(t *testing.T) {
	var b bytes.Buffer
	err := Write(&b, Page{Title: "a <b> & c", Body: ChartBox("x", "t</div>", "n"), Generator: "g",
		Charts: []Chart{{ID: "x", XValues: []Num{1, Gap}, Series: []Series{{Label: "</script><script>alert(1)</script>", Y: []Num{1, 2}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<title>a &lt;b&gt; &amp; c</title>", "t&lt;/div&gt;", "uPlot", "Permission is hereby granted", `"xValues":[1,null]`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Count(page, "</script>") != 3 { // the data, uPlot and charts.js
		t.Errorf("a series label closed a script element: %d </script>", strings.Count(page, "</script>"))
	}
	if strings.Contains(page, "<script src=") || strings.Contains(page, "<link ") {
		t.Error("the page refers to an outside script or stylesheet")
	}
	n, _ := json.Marshal([]Num{1.5, Gap})
	if string(n) != "[1.5,null]" {
		t.Errorf("Num JSON %s", n)
	}
}

// A page without charts carries neither uPlot nor charts.js, and its own
// stylesheet follows the shared one.
func TestWriteWithoutCharts(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Page{Title: "t", Body: "<p>x</p>", Generator: "g", Style: "p { color: red; }"}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script") || strings.Contains(page, "uPlot") {
		t.Error("a page without charts carries the chart scripts")
	}
	if i, j := strings.Index(page, pageCSS[:40]), strings.Index(page, "p { color: red; }"); i < 0 || j < i {
		t.Errorf("page style at %d, shared style at %d: want the page's after the shared", j, i)
	}
}
