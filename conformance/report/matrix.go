package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// MatrixColumn is one implementation in a compatibility matrix: its report,
// the column head, and where its details live.
type MatrixColumn struct {
	Report *ConformanceReport
	// Name heads the column; empty means the implementation's name and
	// version.
	Name string
	// Links are the implementation's own documents (report.md,
	// report.html, a triage README), shown with its failures; optional.
	Links []DocLink
}

// DocLink is a link to a document: its text and its address, relative to
// the document that shows it.
type DocLink struct {
	Text string
	Href string
}

// markdownLinks renders links as Markdown, separated by " · ".
func markdownLinks(links []DocLink) string {
	parts := make([]string, len(links))
	for i, l := range links {
		parts[i] = fmt.Sprintf("[%s](%s)", l.Text, l.Href)
	}
	return strings.Join(parts, " · ")
}

func (c MatrixColumn) name() string {
	if c.Name != "" {
		return c.Name
	}
	return implName(c.Report)
}

func implName(r *ConformanceReport) string {
	return strings.TrimSpace(r.Implementation.Name + " " + r.Implementation.Version)
}

// Citation is what the requirement catalog says about one requirement.
type Citation struct {
	Level     string
	Statement string // the obligation, paraphrased
	Source    string // where the catalog found it ("OIP-REST §Inference ...")
}

// Citer looks a requirement up in the catalog.
type Citer func(id string) (Citation, bool)

// matrixEvidenceLimit bounds how many failed checks of one requirement the
// compatibility document shows with their evidence; the rest are counted
// and left to the implementation's own report.
const matrixEvidenceLimit = 3

// maxMatrixBody bounds each request or response body in the document.
const maxMatrixBody = 1200

// WriteMatrix writes the requirement × implementation table in Markdown:
// the profile verdicts first, then one row per requirement that some
// implementation passed, failed, warned about or skipped, sorted by ID so
// that matrices diff cleanly. A cell is pass, fail, lenient (a client rule
// the server does not enforce), warn, skip (applicable but not checked),
// not run (a route that does not answer, a run that ended early), n/a
// (extension neither advertised nor observed, transport not targeted,
// optional fixture absent) or — (no spec checks it). Failed cells link to
// the evidence WriteCompatibility writes. It returns how many requirements
// it left out because no implementation had a result for them.
func WriteMatrix(w io.Writer, cols []MatrixColumn) (omitted int, err error) {
	if len(cols) == 0 {
		return 0, fmt.Errorf("no reports")
	}
	var b strings.Builder
	writeColumnsHeader(&b, "| |", cols, "---|")

	profiles := map[string]bool{}
	for _, c := range cols {
		for _, p := range c.Report.Profiles {
			profiles[p.Name] = true
		}
	}
	for _, name := range sortedKeys(profiles) {
		fmt.Fprintf(&b, "| **%s** |", name)
		for _, c := range cols {
			cell := "—"
			for _, p := range c.Report.Profiles {
				if p.Name == name {
					cell = "**" + string(p.Verdict) + "**"
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}

	levels := map[string]string{}
	shown := map[string]bool{}
	for _, c := range cols {
		for _, q := range c.Report.Requirements {
			levels[q.ID] = q.Level
			switch q.Status {
			case StatusPassed, StatusFailed, StatusBlocked, StatusLenient, StatusWarning, StatusSkipped, StatusNotRun:
				shown[q.ID] = true
			}
		}
	}
	for _, id := range sortedKeys(levels) {
		if !shown[id] {
			omitted++
			continue
		}
		fmt.Fprintf(&b, "| %s (%s) |", id, levels[id])
		for i, c := range cols {
			cell := "—"
			if q, ok := c.Report.Requirement(id); ok {
				cell = matrixCell(q.Status)
				if q.Status == StatusFailed {
					cell = fmt.Sprintf("[**fail**](#%s)", failureAnchor(i, id))
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	_, err = io.WriteString(w, b.String())
	return omitted, err
}

func matrixCell(s Status) string {
	switch s {
	case StatusPassed:
		return "pass"
	case StatusFailed:
		return "**fail**"
	case StatusLenient:
		return "lenient"
	case StatusWarning:
		return "warn"
	case StatusSkipped:
		return "skip"
	case StatusNotRun:
		return "not run"
	case StatusBlocked:
		return "blocked"
	case StatusNotSupported:
		return "n/a"
	}
	return "—"
}

// failureAnchor is the HTML anchor of a failed requirement of column i.
func failureAnchor(i int, id string) string {
	return fmt.Sprintf("c%d-%s", i+1, strings.ToLower(id))
}

// WriteCompatibility writes the compatibility document: the implementations
// and their runs, their status counts, the matrix (WriteMatrix), and for
// every failed requirement of every implementation the catalog's citation
// (level, statement, source) and what was sent and what came back; then the
// warnings, one line each. cite may be nil.
func WriteCompatibility(w io.Writer, cols []MatrixColumn, cite Citer) error {
	if len(cols) == 0 {
		return fmt.Errorf("no reports")
	}
	var b strings.Builder
	b.WriteString("# OIP compatibility matrix\n\n")
	b.WriteString("Written by `oipkit matrix` from the conformance reports below. Cells: **pass**; **fail** " +
		"(the server broke a rule the spec puts on servers, linked to its evidence); **lenient** (the server " +
		"accepted a request that breaks a rule the spec puts on clients); **warn** (a difference stock clients " +
		"tolerate: SHOULD, MAY, implied, or an ambiguity of §5); **skip** (applicable but not checked, e.g. a " +
		"fixture the runtime cannot deploy); **not run** (a route that did not answer, a run that ended early); " +
		"**n/a** (extension neither advertised nor observed, optional fixture absent); **—** (no spec checks it). " +
		"Lenient and warn fail a verdict only under `--strict`.\n\n")

	b.WriteString("| implementation | suite | date | targets | features | fixtures not deployed | details |\n|---|---|---|---|---|---|---|\n")
	for _, c := range cols {
		r := c.Report
		var missing []string
		for _, f := range sortedKeys(r.Fixtures) {
			if !r.Fixtures[f] {
				missing = append(missing, f)
			}
		}
		fmt.Fprintf(&b, "| %s | %s (oipkit %s) | %s | %s, %s | %s | %s | %s |\n",
			mdEscape(c.name()), r.SuiteVersion, r.OIPKitVersion, r.Date.UTC().Format("2006-01-02"),
			orNone(r.Targets.HTTP), orNone(r.Targets.GRPC), orNone(strings.Join(r.Features, ", ")),
			orNone(strings.Join(missing, ", ")), markdownLinks(c.Links))
	}

	b.WriteString("\n## Requirement counts\n\n")
	writeColumnsHeader(&b, "| status |", cols, "---:|")
	for _, s := range Statuses {
		fmt.Fprintf(&b, "| %s |", s)
		for _, c := range cols {
			fmt.Fprintf(&b, " %d |", c.Report.Counts[s])
		}
		b.WriteString("\n")
	}
	b.WriteString("| **distinct defects** |")
	for _, c := range cols {
		fmt.Fprintf(&b, " **%d** |", c.Report.DistinctDefects())
	}
	b.WriteString("\n\nA failed requirement is a distinct defect: a requirement whose every failing check failed on an answer " +
		"that fails another one (a 500 where an answer was due) is **blocked** by it, not graded, and not counted.\n")

	b.WriteString("\n## Matrix\n\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	b.Reset()
	omitted, err := WriteMatrix(w, cols)
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n%d requirements are left out: no implementation has a result for them (not covered by any spec, or n/a everywhere).\n", omitted)

	b.WriteString("\n## Failures\n")
	for i, c := range cols {
		failed := c.Report.WithStatus(StatusFailed)
		fmt.Fprintf(&b, "\n### %s: %d failed\n", mdEscape(c.name()), len(failed))
		if blocked := c.Report.WithStatus(StatusBlocked); len(blocked) > 0 {
			var by []string
			for _, id := range blocked {
				q, _ := c.Report.Requirement(id)
				by = append(by, fmt.Sprintf("%s (by %s)", id, strings.Join(q.BlockedBy, ", ")))
			}
			fmt.Fprintf(&b, "\nBlocked, not graded: %s.\n", strings.Join(by, "; "))
		}
		if len(c.Links) > 0 {
			fmt.Fprintf(&b, "\nDetails: %s\n", markdownLinks(c.Links))
		}
		if c.Report.Incomplete {
			fmt.Fprintf(&b, "\n**Run incomplete:** %s\n", mdEscape(c.Report.Problem))
		}
		for _, id := range failed {
			q, _ := c.Report.Requirement(id)
			writeFailure(&b, i, c, q, cite)
		}
	}

	writeFindingList(&b, cols, StatusLenient, "Lenient", "lenient")
	writeFindingList(&b, cols, StatusWarning, "Warnings", "warnings")
	_, err = io.WriteString(w, b.String())
	return err
}

// writeFindingList writes one line per requirement with status s of every
// implementation: its first finding and, if any, the ambiguity that
// tolerates it.
func writeFindingList(b *strings.Builder, cols []MatrixColumn, s Status, title, noun string) {
	fmt.Fprintf(b, "\n## %s\n", title)
	for _, c := range cols {
		ids := c.Report.WithStatus(s)
		fmt.Fprintf(b, "\n### %s: %d %s\n\n", mdEscape(c.name()), len(ids), noun)
		for _, id := range ids {
			q, _ := c.Report.Requirement(id)
			msg, amb := "", ""
			if len(q.Findings) > 0 {
				msg = firstLine(q.Findings[0].Message)
				if a := q.Findings[0].Ambiguity; a != "" {
					amb = fmt.Sprintf(" (tolerated by %s)", a)
				}
			}
			more := ""
			if n := len(q.Findings); n > 1 {
				more = fmt.Sprintf(" [%d findings]", n)
			}
			fmt.Fprintf(b, "- **%s** (%s)%s: %s%s\n", q.ID, q.Level, amb, mdEscape(truncate(msg, 240)), more)
		}
	}
}

// writeFailure writes one failed requirement: anchor, citation, and the
// evidence of its failing checks.
func writeFailure(b *strings.Builder, col int, c MatrixColumn, q RequirementResult, cite Citer) {
	fmt.Fprintf(b, "\n<a id=\"%s\"></a>\n#### %s — %s (%s)\n\n", failureAnchor(col, q.ID), mdEscape(c.name()), q.ID, q.Level)
	if cite != nil {
		if ct, ok := cite(q.ID); ok {
			fmt.Fprintf(b, "Spec: %s *Src:* %s.\n", mdEscape(ct.Statement), mdEscape(ct.Source))
		}
	}
	var fails []Finding
	for _, f := range q.Findings {
		if f.Class == ClassFail {
			fails = append(fails, f)
		}
	}
	for i, f := range fails {
		if i == matrixEvidenceLimit {
			fmt.Fprintf(b, "\n%d more failed checks of %s are in the implementation's report.md.\n", len(fails)-i, q.ID)
			break
		}
		fmt.Fprintf(b, "\nCheck: %s\n\n```\n%s\n```\n", mdEscape(f.Spec), truncate(f.Message, 2*maxMatrixBody))
		if f.Evidence != nil {
			fmt.Fprintf(b, "\nSent:\n\n```\n%s```\n\nReceived:\n\n```\n%s```\n",
				clipBody(f.Evidence.Request), clipBody(f.Evidence.Response))
		}
	}
}

// clipBody renders one side of an exchange with its body shortened.
func clipBody(m Message) string {
	if len(m.Body) > maxMatrixBody {
		cut := maxMatrixBody
		for cut > 0 && !utf8.RuneStart(m.Body[cut]) {
			cut--
		}
		m.Body = m.Body[:cut] + "…"
		if m.BodyBytes == 0 {
			m.BodyBytes = len(m.Body)
		}
	}
	return messageText(m)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeColumnsHeader writes the header and separator rows of a Markdown
// table: the first cell as given ("| status |"), then one column per
// implementation; align is each implementation column's separator cell
// ("---|" or "---:|").
func writeColumnsHeader(b *strings.Builder, first string, cols []MatrixColumn, align string) {
	b.WriteString(first)
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", mdEscape(c.name()))
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString(align)
	}
	b.WriteString("\n")
}
