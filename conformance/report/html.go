package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/oipkit/oipkit/htmlpage"
	"github.com/oipkit/oipkit/verdict"
)

// The conformance pages' own stylesheet and templates, on top of
// htmlpage's shared stylesheet.
var (
	//go:embed html.css
	conformanceCSS string
	//go:embed html.tmpl
	htmlTemplates string
)

// htmlTmpl is parsed at first use, not at init: every oipkit command links
// this package and few render HTML.
var htmlTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("reports").Funcs(template.FuncMap{
		"status":    viewStatus,
		"verdict":   viewVerdict,
		"lower":     strings.ToLower,
		"attention": needsAttention,
		"add":       func(a, b int) int { return a + b },
		"reqAnchor": requirementAnchor,
	}).Parse(htmlTemplates))
})

// statusView is how a status is shown: a word (never colour alone), a
// class that colours it, and what it means.
type statusView struct {
	Status Status
	Word   string // "pass", "FAIL", …
	Class  string // CSS class, "st-failed"
	Title  string // what the status means, for the tooltip and the legend
}

var statusViews = map[Status]statusView{
	StatusPassed:       {StatusPassed, "✓ pass", "st-passed", "every check of the requirement passed"},
	StatusFailed:       {StatusFailed, "✗ FAIL", "st-failed", "the server broke a rule the spec puts on servers"},
	StatusBlocked:      {StatusBlocked, "blocked", "st-blocked", "not graded: every check failed on an answer that already fails the requirement named (one defect, one failure)"},
	StatusLenient:      {StatusLenient, "lenient", "st-lenient", "the server accepted a request that breaks a rule the spec puts on clients; fails only under --strict"},
	StatusWarning:      {StatusWarning, "warn", "st-warning", "a difference stock clients tolerate (SHOULD, MAY, implied, or an ambiguity of the spec); fails only under --strict"},
	StatusSkipped:      {StatusSkipped, "skip", "st-skipped", "applicable but not checked, e.g. a fixture model is not deployed"},
	StatusNotRun:       {StatusNotRun, "not run", "st-not-run", "not checked: a route did not answer or the run ended early"},
	StatusNotSupported: {StatusNotSupported, "n/a", "st-not-supported", "extension neither advertised nor observed, transport not targeted, or optional fixture absent"},
	StatusNotCovered:   {StatusNotCovered, "not covered", "st-not-covered", "no spec checks the requirement"},
}

func viewStatus(s Status) statusView {
	if v, ok := statusViews[s]; ok {
		return v
	}
	return statusView{s, string(s), "st-unknown", ""}
}

// verdictView is how a profile verdict is shown.
type verdictView struct {
	Word, Class, Title string
}

func viewVerdict(v verdict.Status) verdictView {
	switch v {
	case verdict.Pass:
		return verdictView{"✓ PASS", "vd-pass", "no blocking requirement failed and nothing was skipped"}
	case verdict.Failed:
		return verdictView{"✗ FAILED", "vd-failed", "a requirement failed (under --strict also: lenient or warned)"}
	case verdict.Inconclusive:
		return verdictView{"INCONCLUSIVE", "vd-inconclusive", "nothing failed, but applicable requirements were skipped or not run: conformance is not established"}
	case verdict.NotSupported:
		return verdictView{"n/a", "vd-not-supported", "the profile's transport was not targeted or its features are not supported"}
	case verdict.NotRun:
		return verdictView{"NOT-RUN", "vd-not-run", "the run could not check everything it should have"}
	case "":
		return verdictView{"—", "vd-none", "no verdict for this profile"}
	}
	return verdictView{string(v), "vd-none", ""}
}

// htmlFinding is one finding as the pages show it.
type htmlFinding struct {
	Class     Class
	Spec      string
	Message   string
	Ambiguity string
	Evidence  *htmlEvidence
}

// htmlEvidence is an exchange: a one-line summary and both sides as wire
// dumps.
type htmlEvidence struct {
	Summary    string
	Sent       string
	Received   string
	Reproducer string // a shell command sending the request again, or ""
}

// viewFinding shows a finding; reproducer is its command, "" for none.
func viewFinding(f Finding, bodyLimit int, reproducer string) htmlFinding {
	h := htmlFinding{Class: f.Class, Spec: f.Spec, Message: f.Message, Ambiguity: f.Ambiguity}
	if f.Evidence != nil {
		h.Evidence = viewEvidence(f.Evidence, bodyLimit)
		h.Evidence.Reproducer = reproducer
	}
	return h
}

func viewEvidence(e *Evidence, bodyLimit int) *htmlEvidence {
	req, resp := e.Request, e.Response
	summary := strings.TrimSpace(req.Method + " " + req.Target)
	if resp.Status != "" {
		summary += " → " + firstLine(resp.Status)
	}
	return &htmlEvidence{Summary: truncate(summary, 160), Sent: wireText(clip(req, bodyLimit)), Received: wireText(clip(resp, bodyLimit))}
}

// clip shortens a message's body to limit bytes (0: no limit), keeping
// its real size in BodyBytes.
func clip(m Message, limit int) Message {
	if limit <= 0 || len(m.Body) <= limit {
		return m
	}
	if m.BodyBytes == 0 {
		m.BodyBytes = len(m.Body)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(m.Body[cut]) {
		cut--
	}
	m.Body = m.Body[:cut] + "…"
	return m
}

// htmlRequirement is one requirement row of the conformance page.
type htmlRequirement struct {
	RequirementResult
	Anchor string
	Source string // the catalog's citation, if known
	Shown  []htmlFinding
	More   []htmlFinding // folded: beyond the first few
}

// htmlGroup is a requirement group (OIP-REST-INFER) and its rows.
type htmlGroup struct {
	Name      string
	Anchor    string
	Rows      []htmlRequirement
	Statuses  []Status // the statuses its rows have, for the filter
	Attention bool     // a row needs attention (needsAttention)
}

// reportFindingsShown is how many findings of one requirement the page
// shows unfolded; the rest are one click away.
const reportFindingsShown = 3

// groupOf is a requirement ID without its number: OIP-REST-INFER-006 →
// OIP-REST-INFER.
func groupOf(id string) string {
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}

// requirementAnchor is the id of a requirement's row on the conformance page.
func requirementAnchor(id string) string { return "req-" + strings.ToLower(id) }

// WriteHTML writes the conformance report as one self-contained HTML page
// (package htmlpage): the implementation, its targets, the extensions it
// advertised against what the probes observed, the counts by status, each
// profile's verdict, and every requirement by group with its ID, level,
// binds and class, statement and status, and under it each finding with
// its spec, the catalog's citation and message, and the evidence (what was
// sent, what came back) folded. The requirements can be filtered by status
// with plain HTML and CSS: no script is needed to read or filter the page.
// cite may be nil.
func WriteHTML(w io.Writer, r *ConformanceReport, cite Citer) error {
	data := map[string]any{"R": r, "Verdict": viewVerdict(r.Verdict()), "Impl": implName(r),
		"Date": r.Date.UTC().Format("2006-01-02 15:04 UTC")}

	var missing []string
	for _, f := range sortedKeys(r.Fixtures) {
		if !r.Fixtures[f] {
			missing = append(missing, f)
		}
	}
	data["Missing"] = missing

	type countView struct {
		View statusView
		N    int
	}
	var counts []countView
	for _, s := range Statuses {
		counts = append(counts, countView{viewStatus(s), r.Counts[s]})
	}
	data["Counts"] = counts
	data["Total"] = len(r.Requirements)
	attention := 0
	for _, q := range r.Requirements {
		if needsAttention(q.Status) {
			attention++
		}
	}
	data["Attention"] = attention
	data["Defects"] = r.DistinctDefects()
	data["Blocked"] = r.Counts[StatusBlocked]

	type idList struct {
		View statusView
		IDs  []string
	}
	type profileView struct {
		ProfileResult
		Lists []idList
	}
	var profiles []profileView
	for _, p := range r.Profiles {
		pv := profileView{ProfileResult: p}
		for _, l := range []idList{{viewStatus(StatusFailed), p.Failed}, {viewStatus(StatusLenient), p.Lenient},
			{viewStatus(StatusWarning), p.Warnings}, {viewStatus(StatusSkipped), p.Skipped}, {viewStatus(StatusNotRun), p.NotRun}, {viewStatus(StatusBlocked), p.Blocked}} {
			if len(l.IDs) > 0 {
				pv.Lists = append(pv.Lists, l)
			}
		}
		profiles = append(profiles, pv)
	}
	data["Profiles"] = profiles

	type extensionView struct {
		ExtensionResult
		Disagrees bool
		Evidence  *htmlEvidence
	}
	var exts []extensionView
	for _, e := range r.Extensions {
		if !e.Advertised && e.Probe != ProbeObserved && !(e.Probe != ProbeNone && e.Tested) {
			continue
		}
		ev := extensionView{ExtensionResult: e,
			Disagrees: e.Advertised && e.Probe == ProbeAbsent || !e.Advertised && e.Probe == ProbeObserved}
		if e.Evidence != nil {
			ev.Evidence = viewEvidence(e.Evidence, 0)
		}
		exts = append(exts, ev)
	}
	data["Extensions"] = exts

	var groups []*htmlGroup
	byName := map[string]*htmlGroup{}
	for _, q := range r.Requirements {
		name := groupOf(q.ID)
		g := byName[name]
		if g == nil {
			g = &htmlGroup{Name: name, Anchor: "grp-" + strings.ToLower(name)}
			byName[name] = g
			groups = append(groups, g)
		}
		row := htmlRequirement{RequirementResult: q, Anchor: requirementAnchor(q.ID)}
		if cite != nil {
			if ct, ok := cite(q.ID); ok {
				row.Source = ct.Source
			}
		}
		for _, f := range sortFindings(q.Findings) {
			hf := viewFinding(f, 0, f.ReproducerFor(r.Targets))
			switch {
			case len(row.Shown) < reportFindingsShown:
				row.Shown = append(row.Shown, hf)
			default:
				row.More = append(row.More, hf)
			}
		}
		g.Rows = append(g.Rows, row)
		g.Attention = g.Attention || needsAttention(q.Status)
		if !containsStatus(g.Statuses, q.Status) {
			g.Statuses = append(g.Statuses, q.Status)
		}
	}
	data["Groups"] = groups
	data["Legend"] = legend()

	var body bytes.Buffer
	if err := htmlTmpl().ExecuteTemplate(&body, "report", data); err != nil {
		return fmt.Errorf("conformance report page: %w", err)
	}
	return htmlpage.Write(w, htmlpage.Page{
		Title:     "OIP conformance: " + implName(r),
		Body:      template.HTML(body.String()),
		Generator: "oipkit " + r.OIPKitVersion,
		Style:     template.CSS(conformanceCSS + statusFilterCSS()),
	})
}

// needsAttention: the statuses a reader acts on.
func needsAttention(s Status) bool {
	switch s {
	case StatusFailed, StatusBlocked, StatusLenient, StatusWarning, StatusSkipped, StatusNotRun:
		return true
	}
	return false
}

// sortFindings orders findings fail, lenient, warning, keeping the
// report's order within a class.
func sortFindings(fs []Finding) []Finding {
	out := append([]Finding(nil), fs...)
	rank := map[Class]int{ClassFail: 0, ClassLenient: 1, ClassWarning: 2}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].Class] < rank[out[j].Class] })
	return out
}

func containsStatus(ss []Status, s Status) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// legend lists every status with its word and meaning.
func legend() []statusView {
	var out []statusView
	for _, s := range Statuses {
		out = append(out, viewStatus(s))
	}
	return out
}

// statusFilterCSS hides the requirement rows (and groups) the checked
// status filter does not select: the filter is radio buttons and CSS
// (:has), so it works without scripts.
func statusFilterCSS() string {
	var b strings.Builder
	for _, s := range Statuses {
		fmt.Fprintf(&b, "main:has(#f-%[1]s:checked) tr.rq:not(.s-%[1]s), main:has(#f-%[1]s:checked) tbody.grp:not(.has-%[1]s) { display: none; }\n", s)
	}
	b.WriteString("main:has(#f-attention:checked) tr.rq:not(.attention), main:has(#f-attention:checked) tbody.grp:not(.attention) { display: none; }\n")
	return b.String()
}
