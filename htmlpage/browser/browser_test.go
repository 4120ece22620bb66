package browser

import (
	"context"
	"errors"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/htmlpage"
)

// requireBrowser skips when no chromium is installed, unless
// OIPKIT_REQUIRE_BROWSER is set (make test sets it after installing one).
func requireBrowser(t *testing.T) {
	t.Helper()
	if _, err := Executable(); errors.Is(err, ErrNoBrowser) {
		if os.Getenv("OIPKIT_REQUIRE_BROWSER") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

func writePage(t *testing.T, p htmlpage.Page) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "page.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := htmlpage.Write(f, p); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckRendersChartsOffline(t *testing.T) {
	requireBrowser(t)
	x := []htmlpage.Num{1, 2, 3, 4}
	page := htmlpage.Page{
		Title: "check",
		Body:  htmlpage.ChartBox("a", "aligned", "") + htmlpage.ChartBox("b", "xy", "") + htmlpage.ChartBox("c", "spectrum", ""),
		Charts: []htmlpage.Chart{
			{ID: "a", X: htmlpage.Axis{Label: "s", Unit: htmlpage.UnitSeconds, FromZero: true}, Y: htmlpage.Axis{Label: "ms", Unit: htmlpage.UnitMillis, Log: true},
				Y2: &htmlpage.Axis{Label: "n", Unit: htmlpage.UnitCount}, XValues: x,
				Series: []htmlpage.Series{{Label: "p50", Y: []htmlpage.Num{1, 2, htmlpage.Gap, 4}}, {Label: "errors", Y: x, Axis: 2, Style: "bars"}},
				Lines:  []htmlpage.Line{{Axis: "y", Value: 3, Label: "SLO"}, {Axis: "x", Value: 2, Label: "c=2"}}},
			{ID: "b", Mode: "xy", X: htmlpage.Axis{Label: "rps", Unit: htmlpage.UnitRate}, Y: htmlpage.Axis{Label: "ms", Unit: htmlpage.UnitMillis},
				Series: []htmlpage.Series{{Label: "p99", X: []htmlpage.Num{100, 300, 200}, Y: []htmlpage.Num{1, 5, 2}}},
				Points: []htmlpage.Point{{X: 200, Y: 2, Label: "knee"}}},
			{ID: "c", X: htmlpage.Axis{Label: "percentile", Unit: htmlpage.UnitPercentile, Log: true}, Y: htmlpage.Axis{Unit: htmlpage.UnitMillis, Log: true},
				XValues: []htmlpage.Num{1, 10, 100, 1000}, Series: []htmlpage.Series{{Label: "response", Y: []htmlpage.Num{0.1, 0.5, 2, 9}}}},
		},
		Generator: "test",
	}
	shot := filepath.Join(t.TempDir(), "page.png")
	rep, err := Check(context.Background(), writePage(t, page), shot, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 || rep.Charts != 3 || rep.Title != "check" {
		t.Errorf("report %+v", rep)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("screenshot: %v", err)
	}
}

// The check fails pages it should: a chart that cannot be drawn, a script
// error, a network fetch.
func TestCheckCatchesBrokenPages(t *testing.T) {
	requireBrowser(t)
	page := htmlpage.Page{
		Title: "broken",
		Body: template.HTML(`<img src="http://127.0.0.1:9/x.png"><script>undefinedFunction()</script>`) +
			htmlpage.ChartBox("a", "a", ""),
		Charts: []htmlpage.Chart{{ID: "missing", XValues: []htmlpage.Num{1}, Series: []htmlpage.Series{{Y: []htmlpage.Num{1}}}},
			{ID: "a", XValues: []htmlpage.Num{1, 2}, Series: []htmlpage.Series{{Y: []htmlpage.Num{1}}}, Y: htmlpage.Axis{Log: true}}},
	}
	rep, err := Check(context.Background(), writePage(t, page), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"undefinedFunction", "network request: http://127.0.0.1:9/x.png", "chart missing: no element"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}
