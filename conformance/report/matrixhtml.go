package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/oipkit/oipkit/htmlpage"
	"github.com/oipkit/oipkit/verdict"
	"github.com/oipkit/oipkit/version"
)

// matrixCellView is one cell of the requirement grid or the group summary.
type matrixCellView struct {
	Class string // status colour, "st-failed"
	Word  string
	Title string
	Href  string // the folded evidence it links to, if any
}

// matrixColView is an implementation column.
type matrixColView struct {
	Name, Sub string
	Anchor    string
	Links     []DocLink
	R         *ConformanceReport
	Missing   []string // fixtures not deployed
	Evidence  []matrixEvidence

	Failed, Lenient, Warnings int
}

type matrixEvidence struct {
	Anchor    string
	View      statusView
	ID, Level string
	Statement string
	Source    string
	Findings  []htmlFinding
	More      int // findings left to the implementation's report
}

type matrixRowView struct {
	ID, Level, Statement string
	Classes              string // any-fail, attention, differs: for the filter
	Cells                []matrixCellView
}

type matrixGroupView struct {
	Name, Anchor string
	Classes      string
	Rows         []matrixRowView
	Summary      []matrixCellView // per implementation
}

type blockedView struct {
	Name, Short string
	B           *Blocked
	Links       []DocLink
}

// severity orders statuses for a group's summary: the worst decides its
// colour.
var severity = map[Status]int{StatusFailed: 8, StatusBlocked: 7, StatusNotRun: 7, StatusLenient: 6, StatusWarning: 5, StatusSkipped: 4,
	StatusPassed: 3, StatusNotSupported: 2, StatusNotCovered: 1}

// matrixWord is a status as a grid cell says it: not-covered is a dash.
func matrixWord(s Status) string {
	if s == StatusNotCovered {
		return "—"
	}
	return viewStatus(s).Word
}

// WriteCompatibilityHTML writes the compatibility matrix as one
// self-contained HTML page (package htmlpage). At the top, implementations
// as columns (blocked ones too, with why they were not run): each
// profile's verdict, the requirement counts by status, and per requirement
// group a summary cell coloured by its worst status. Then the grid:
// requirements as rows grouped by group, one colour-coded cell per
// implementation that says its status in words, failed, lenient and
// warning cells linking to their evidence, folded further down; a filter
// (plain HTML and CSS) narrows it to the rows with a failure, the rows
// that need a look, or the rows where implementations differ. Then the
// runs and the implementations not run here with the commands that grade
// them. cite may be nil.
func WriteCompatibilityHTML(w io.Writer, cols []MatrixColumn, blocked []BlockedRow, cite Citer) error {
	if len(cols) == 0 {
		return fmt.Errorf("no reports")
	}
	views := matrixColumns(cols)
	addMatrixEvidence(views, cols, cite)
	grid := matrixGrid(cols, cite)
	data := map[string]any{
		"Version":    version.Version,
		"Suites":     matrixSuites(cols),
		"Dates":      matrixDates(cols),
		"Blocked":    blockedViews(blocked),
		"Verdicts":   matrixVerdicts(cols),
		"Counts":     matrixCounts(cols, views),
		"Incomplete": incompleteRuns(views),
		"Groups":     grid.Groups,
		"Omitted":    grid.Omitted,
		"Shown":      grid.Shown,
		"Failing":    grid.Failing,
		"Attention":  grid.Attention,
		"Differing":  grid.Differing,
		"Cols":       views,
		"Legend":     legend(),
	}
	var body bytes.Buffer
	if err := htmlTmpl().ExecuteTemplate(&body, "matrix", data); err != nil {
		return fmt.Errorf("compatibility page: %w", err)
	}
	return htmlpage.Write(w, htmlpage.Page{
		Title:     "OIP compatibility matrix",
		Body:      template.HTML(body.String()),
		Generator: "oipkit " + version.Version,
		Style:     template.CSS(conformanceCSS + matrixFilterCSS),
	})
}

// matrixColumns is the page's view of each implementation column: its
// name over its version, its anchor and its fixtures not deployed.
func matrixColumns(cols []MatrixColumn) []matrixColView {
	var views []matrixColView
	for i, c := range cols {
		r := c.Report
		name, sub := c.name(), ""
		if base, impl, ok := strings.Cut(name, ": "); ok {
			name, sub = base, impl
		} else if r.Implementation.Version != "" && c.Name == "" {
			name, sub = r.Implementation.Name, r.Implementation.Version
		}
		v := matrixColView{Name: name, Sub: sub, Anchor: fmt.Sprintf("impl-c%d", i+1), Links: c.Links, R: r,
			Failed: r.Counts[StatusFailed], Lenient: r.Counts[StatusLenient], Warnings: r.Counts[StatusWarning]}
		for _, f := range sortedKeys(r.Fixtures) {
			if !r.Fixtures[f] {
				v.Missing = append(v.Missing, f)
			}
		}
		views = append(views, v)
	}
	return views
}

// matrixSuites lists the suite versions the reports were run with.
func matrixSuites(cols []MatrixColumn) string {
	suites := map[string]bool{}
	for _, c := range cols {
		suites[c.Report.SuiteVersion] = true
	}
	return strings.Join(sortedKeys(suites), ", ")
}

// matrixDates is the day of the runs, or the first and the last day.
func matrixDates(cols []MatrixColumn) string {
	first, last := cols[0].Report.Date, cols[0].Report.Date
	for _, c := range cols {
		if c.Report.Date.Before(first) {
			first = c.Report.Date
		}
		if c.Report.Date.After(last) {
			last = c.Report.Date
		}
	}
	dates := first.UTC().Format("2006-01-02")
	if d := last.UTC().Format("2006-01-02"); d != dates {
		dates += " to " + d
	}
	return dates
}

func blockedViews(blocked []BlockedRow) []blockedView {
	var bl []blockedView
	for _, b := range blocked {
		bl = append(bl, blockedView{Name: implName(&ConformanceReport{Implementation: b.Blocked.Implementation}),
			Short: firstSentence(b.Blocked.Reason), B: b.Blocked, Links: b.Links})
	}
	return bl
}

// matrixVerdictRow is a profile's verdict in every implementation.
type matrixVerdictRow struct {
	Name  string
	Cells []verdictView
}

// matrixVerdicts is the profile verdicts, in name order; a profile a
// report does not have is a dash.
func matrixVerdicts(cols []MatrixColumn) []matrixVerdictRow {
	profiles := map[string]bool{}
	for _, c := range cols {
		for _, p := range c.Report.Profiles {
			profiles[p.Name] = true
		}
	}
	var rows []matrixVerdictRow
	for _, name := range sortedKeys(profiles) {
		row := matrixVerdictRow{Name: name}
		for _, c := range cols {
			var v verdict.Status
			for _, p := range c.Report.Profiles {
				if p.Name == name {
					v = p.Verdict
				}
			}
			row.Cells = append(row.Cells, viewVerdict(v))
		}
		rows = append(rows, row)
	}
	return rows
}

// matrixCountRow is the number of requirements of one status in every
// implementation.
type matrixCountRow struct {
	View  statusView
	Cells []matrixCellView
}

// matrixCounts is the requirement counts by status, failed, lenient and
// warning counts linking to the column's evidence, with the distinct
// defects beside the failed count.
func matrixCounts(cols []MatrixColumn, views []matrixColView) []matrixCountRow {
	var counts []matrixCountRow
	for _, s := range []Status{StatusFailed, StatusBlocked, StatusNotRun, StatusLenient, StatusWarning, StatusSkipped, StatusPassed} {
		row := matrixCountRow{View: viewStatus(s)}
		for i, c := range cols {
			n := c.Report.Counts[s]
			cell := matrixCellView{Word: fmt.Sprint(n)}
			if n > 0 && (s == StatusFailed || s == StatusLenient || s == StatusWarning) {
				cell.Href = "#" + views[i].Anchor
			}
			if n > 0 && s != StatusPassed {
				cell.Class = viewStatus(s).Class
			}
			row.Cells = append(row.Cells, cell)
		}
		counts = append(counts, row)
		if s == StatusFailed {
			// The distinct defects: the failed requirements, cascades
			// blocked (Block); a row of its own so that it reads beside
			// the counts.
			defects := matrixCountRow{View: statusView{Status: "distinct defects", Word: "defects", Class: "st-failed",
				Title: "failed requirements once those failing only on another's failed answers are blocked"}}
			for _, c := range cols {
				defects.Cells = append(defects.Cells, matrixCellView{Word: fmt.Sprint(c.Report.DistinctDefects())})
			}
			counts = append(counts, defects)
		}
	}
	return counts
}

// incompleteRuns says, for each incomplete run, why.
func incompleteRuns(views []matrixColView) []string {
	var out []string
	for _, v := range views {
		if v.R.Incomplete {
			out = append(out, v.Name+": "+v.R.Problem)
		}
	}
	return out
}

// matrixGridView is the requirement grid and what its filter counts.
type matrixGridView struct {
	Groups                                        []*matrixGroupView
	Omitted, Shown, Failing, Attention, Differing int
}

// matrixGrid is every requirement some implementation has a result for,
// grouped, in the reports' (the catalog's) order; a requirement no
// implementation ran (not supported or not covered everywhere) is omitted.
func matrixGrid(cols []MatrixColumn, cite Citer) matrixGridView {
	var grid matrixGridView
	byGroup := map[string]*matrixGroupView{}
	seen := map[string]bool{}
	for _, c := range cols {
		for _, q := range c.Report.Requirements {
			if seen[q.ID] {
				continue
			}
			seen[q.ID] = true
			row, shown := matrixRow(q, cols, cite)
			if !shown {
				grid.Omitted++
				continue
			}
			grid.Shown++
			for _, cl := range strings.Fields(row.Classes) {
				switch cl {
				case "any-fail":
					grid.Failing++
				case "attention":
					grid.Attention++
				case "differs":
					grid.Differing++
				}
			}
			name := groupOf(q.ID)
			g := byGroup[name]
			if g == nil {
				g = &matrixGroupView{Name: name, Anchor: "grp-" + strings.ToLower(name)}
				byGroup[name] = g
				grid.Groups = append(grid.Groups, g)
			}
			g.Rows = append(g.Rows, row)
		}
	}
	for _, g := range grid.Groups {
		var classes []string
		for _, cl := range []string{"any-fail", "attention", "differs"} {
			for _, row := range g.Rows {
				if strings.Contains(" "+row.Classes+" ", " "+cl+" ") {
					classes = append(classes, cl)
					break
				}
			}
		}
		g.Classes = strings.Join(classes, " ")
		for i, c := range cols {
			g.Summary = append(g.Summary, groupSummary(g, c.Report, i))
		}
	}
	return grid
}

// matrixRow is requirement q's row: a cell per implementation saying its
// status in words, failed, lenient and warning cells linking to their
// evidence, and the filter's classes (any-fail, attention, differs).
// shown is false when no implementation ran it.
func matrixRow(q RequirementResult, cols []MatrixColumn, cite Citer) (row matrixRowView, shown bool) {
	row = matrixRowView{ID: q.ID, Level: q.Level, Statement: q.Statement}
	statuses := map[Status]bool{}
	anyFail, anyAttention := false, false
	for i, c := range cols {
		r, ok := c.Report.Requirement(q.ID)
		if !ok {
			statuses[""] = true
			row.Cells = append(row.Cells, matrixCellView{Class: "st-not-covered", Word: "—", Title: "no result in this report"})
			continue
		}
		v := viewStatus(r.Status)
		cell := matrixCellView{Class: v.Class, Word: matrixWord(r.Status), Title: v.Title}
		if r.Reason != "" {
			cell.Title = string(r.Status) + ": " + r.Reason
		}
		if row.Statement == "" {
			row.Statement = r.Statement
		}
		switch r.Status {
		case StatusFailed, StatusLenient, StatusWarning:
			cell.Href = "#" + failureAnchor(i, q.ID)
			if len(r.Findings) > 0 {
				cell.Title = string(r.Status) + ": " + truncate(firstLine(sortFindings(r.Findings)[0].Message), 200)
			}
		}
		switch r.Status {
		case StatusPassed, StatusFailed, StatusBlocked, StatusLenient, StatusWarning, StatusSkipped, StatusNotRun:
			shown = true
		}
		statuses[r.Status] = true
		anyFail = anyFail || r.Status == StatusFailed
		anyAttention = anyAttention || needsAttention(r.Status)
		row.Cells = append(row.Cells, cell)
	}
	if row.Statement == "" && cite != nil {
		if ct, ok := cite(q.ID); ok {
			row.Statement = ct.Statement
		}
	}
	var classes []string
	if anyFail {
		classes = append(classes, "any-fail")
	}
	if anyAttention {
		classes = append(classes, "attention")
	}
	if len(statuses) > 1 {
		classes = append(classes, "differs")
	}
	row.Classes = strings.Join(classes, " ")
	return row, shown
}

// addMatrixEvidence folds the evidence of every failed, lenient and
// warning cell into its column.
func addMatrixEvidence(views []matrixColView, cols []MatrixColumn, cite Citer) {
	for i, c := range cols {
		for _, s := range []Status{StatusFailed, StatusLenient, StatusWarning} {
			for _, q := range c.Report.Requirements {
				if q.Status != s {
					continue
				}
				ev := matrixEvidence{Anchor: failureAnchor(i, q.ID), View: viewStatus(s), ID: q.ID, Level: q.Level, Statement: q.Statement}
				if cite != nil {
					if ct, ok := cite(q.ID); ok {
						ev.Source = ct.Source
						if ev.Statement == "" {
							ev.Statement = ct.Statement
						}
					}
				}
				for j, f := range sortFindings(q.Findings) {
					if j == matrixEvidenceLimit {
						ev.More = len(q.Findings) - j
						break
					}
					ev.Findings = append(ev.Findings, viewFinding(f, maxMatrixBody, ""))
				}
				views[i].Evidence = append(views[i].Evidence, ev)
			}
		}
	}
}

// matrixFilterCSS: the grid's filter, radio buttons and CSS (:has), so it
// works without scripts.
const matrixFilterCSS = `
main:has(#m-fail:checked) tr.rq:not(.any-fail), main:has(#m-fail:checked) tbody.grp:not(.any-fail) { display: none; }
main:has(#m-attention:checked) tr.rq:not(.attention), main:has(#m-attention:checked) tbody.grp:not(.attention) { display: none; }
main:has(#m-differs:checked) tr.rq:not(.differs), main:has(#m-differs:checked) tbody.grp:not(.differs) { display: none; }
`

// groupSummary is one implementation's cell in the group summary: its
// counts by status, worst first, coloured by the worst.
func groupSummary(g *matrixGroupView, r *ConformanceReport, col int) matrixCellView {
	n := map[Status]int{}
	worst := Status("")
	for _, row := range g.Rows {
		q, ok := r.Requirement(row.ID)
		if !ok {
			continue
		}
		n[q.Status]++
		if severity[q.Status] > severity[worst] {
			worst = q.Status
		}
	}
	var parts []string
	for _, s := range []Status{StatusFailed, StatusBlocked, StatusNotRun, StatusLenient, StatusWarning, StatusSkipped, StatusPassed} {
		if n[s] > 0 {
			word := strings.TrimPrefix(strings.TrimPrefix(viewStatus(s).Word, "✓ "), "✗ ")
			parts = append(parts, fmt.Sprintf("%d %s", n[s], strings.ToLower(word)))
		}
	}
	cell := matrixCellView{Href: "#" + g.Anchor}
	switch {
	case worst == "":
		cell.Class, cell.Word = "st-not-covered", "—"
	case len(parts) == 0:
		cell.Class, cell.Word, cell.Title = viewStatus(worst).Class, matrixWord(worst), viewStatus(worst).Title
	case worst == StatusPassed:
		cell.Class, cell.Word = "st-passed", fmt.Sprintf("✓ all %d pass", n[StatusPassed])
	default:
		cell.Class, cell.Word = viewStatus(worst).Class, strings.Join(parts, " · ")
		if worst == StatusFailed {
			cell.Word = "✗ " + cell.Word
		}
	}
	if cell.Title == "" {
		cell.Title = fmt.Sprintf("%s: %d requirements shown", g.Name, len(g.Rows))
	}
	return cell
}

// firstSentence is s up to its first full stop followed by a space.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}
