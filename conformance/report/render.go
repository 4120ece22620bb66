package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/oipkit/oipkit/verdict"
)

// summaryDefects bounds the defects the text summary lists one a line
// (each failed requirement is listed whatever the bound); report.md and
// the findings file have them all.
const summaryDefects = 20

// WriteText writes the human summary printed at the end of a run: the
// implementation, the extensions, the verdicts of the profiles that apply
// (the not-supported ones on one line), the counts, one line per distinct
// defect ([Defects]: requirement, statement, reason), one per lenient
// requirement, the warnings (one per requirement under --strict, else one
// list), then the skipped and not-run requirements grouped by reason.
func WriteText(w io.Writer, r *ConformanceReport) error { return writeText(w, r, false) }

// WriteTextWithReproducers is [WriteText] with each listed defect's
// reproducer under it.
func WriteTextWithReproducers(w io.Writer, r *ConformanceReport) error {
	return writeText(w, r, true)
}

func writeText(w io.Writer, r *ConformanceReport, reproducers bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "OIP conformance: %s %s (suite %s, oipkit %s, %s)\n",
		r.Implementation.Name, r.Implementation.Version, r.SuiteVersion, r.OIPKitVersion, r.Duration)
	fmt.Fprintf(&b, "targets: http=%s grpc=%s; features (%s): %s; strict=%v\n",
		orNone(r.Targets.HTTP), orNone(r.Targets.GRPC), r.FeatureSource, orNone(strings.Join(r.Features, ",")), r.Strict)
	if line := extensionLine(r); line != "" {
		fmt.Fprintf(&b, "extensions: %s\n", line)
	}
	if r.Incomplete {
		fmt.Fprintf(&b, "RUN INCOMPLETE: %s\n", r.Problem)
	}
	// The profiles by verdict, each with what made it fail or inconclusive;
	// the counts of each are in report.md.
	byVerdict := map[verdict.Status][]string{}
	for _, p := range r.Profiles {
		name := p.Name
		switch p.Verdict {
		case verdict.Failed:
			name += fmt.Sprintf(" (%d failed)", len(p.Failed)+boolInt(r.Strict)*(len(p.Lenient)+len(p.Warnings)))
		case verdict.Inconclusive:
			name += fmt.Sprintf(" (%d not graded)", len(p.Skipped)+len(p.NotRun)+len(p.Blocked))
		}
		byVerdict[p.Verdict] = append(byVerdict[p.Verdict], name)
	}
	for _, v := range []verdict.Status{verdict.Failed, verdict.Inconclusive, verdict.Pass, verdict.NotSupported} {
		if names := byVerdict[v]; len(names) > 0 {
			fmt.Fprintf(&b, "  %s: %s\n", strings.ToUpper(string(v)), idList(names, 5))
		}
	}
	fmt.Fprintf(&b, "requirements: %s\n", countLine(r.Counts))
	fmt.Fprintf(&b, "distinct defects: %d%s\n", r.DistinctDefects(), blockedNote(r))
	all := Defects(r)
	ds, hidden := shownDefects(all, summaryDefects)
	for _, d := range ds {
		c := d.First()
		q := c.Requirement
		more := ""
		if n := d.Exchanges(); n > 1 {
			more = fmt.Sprintf(" (and %d more failing exchange(s))", n-1)
		}
		fmt.Fprintf(&b, "  FAIL    %s [%s]: %s — %s%s\n", q.ID, q.Level,
			clipText(q.Statement, 80), clipText(firstLine(c.Finding.Message), 160), more)
		if reproducers {
			if cmd := c.Finding.ReproducerFor(r.Targets); cmd != "" {
				b.WriteString("          " + strings.ReplaceAll(cmd, "\n", "\n          ") + "\n")
			}
		}
	}
	if hidden > 0 {
		var rest []string
		for _, d := range all[len(ds):] {
			rest = append(rest, d.IDs[0])
		}
		fmt.Fprintf(&b, "  FAIL    and %d more distinct defect(s) (report.md and 'oipkit report --findings' have them all): %s\n", hidden, idList(rest, 6))
	}
	for _, q := range r.Requirements {
		if q.Status != StatusLenient && !(q.Status == StatusWarning && r.Strict) {
			continue
		}
		for _, f := range q.Findings {
			if f.Class != ClassFail {
				fmt.Fprintf(&b, "  %-7s %s [%s]: %s\n", classWord(f.Class), q.ID, q.Level, clipText(firstLine(f.Message), 160))
				break
			}
		}
	}
	if warned := r.WithStatus(StatusWarning); len(warned) > 0 && !r.Strict {
		fmt.Fprintf(&b, "  WARN    %d requirement(s) with differences stock clients tolerate: %s\n", len(warned), idList(warned, 8))
	}
	// The blocked requirements, a line for each requirement blocking them.
	var blockers []string
	blocked := map[string][]string{}
	for _, q := range r.Requirements {
		if q.Status == StatusBlocked {
			by := strings.Join(q.BlockedBy, ",")
			if blocked[by] == nil {
				blockers = append(blockers, by)
			}
			blocked[by] = append(blocked[by], q.ID)
		}
	}
	for _, by := range blockers {
		fmt.Fprintf(&b, "  BLOCKED by %s (not graded, its checks failed on answers that fail it): %s\n", by, idList(blocked[by], 6))
	}
	for _, s := range []Status{StatusSkipped, StatusNotRun} {
		byReason := map[string][]string{}
		var reasons []string
		for _, q := range r.Requirements {
			if q.Status != s {
				continue
			}
			if len(byReason[q.Reason]) == 0 {
				reasons = append(reasons, q.Reason)
			}
			byReason[q.Reason] = append(byReason[q.Reason], q.ID)
		}
		for _, why := range reasons {
			ids := byReason[why]
			list := strings.Join(ids, ", ")
			if len(ids) > 6 {
				list = strings.Join(ids[:6], ", ") + fmt.Sprintf(" and %d more", len(ids)-6)
			}
			fmt.Fprintf(&b, "  %-7s %s: %s\n", strings.ToUpper(strings.ReplaceAll(string(s), "-", " ")), why, list)
		}
	}
	for _, p := range r.Profiles {
		if p.Verdict == verdict.Inconclusive {
			fmt.Fprintf(&b, "NOTE: profile %s is INCONCLUSIVE: %d applicable requirement(s) were skipped, not run or blocked; conformance is not established\n",
				p.Name, len(p.Skipped)+len(p.NotRun)+len(p.Blocked))
		}
	}
	if !r.Strict && r.Counts[StatusLenient]+r.Counts[StatusWarning] > 0 {
		fmt.Fprintf(&b, "NOTE: %d lenient and %d warning requirement(s) do not fail the verdict; --strict makes them fail\n",
			r.Counts[StatusLenient], r.Counts[StatusWarning])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// extensionLine summarizes advertised and observed extensions in one line,
// calling out every disagreement between the two.
func extensionLine(r *ConformanceReport) string {
	var parts []string
	for _, e := range r.Extensions {
		// An extension tested on an inconclusive probe is listed too.
		if !e.Advertised && e.Probe != ProbeObserved && !(e.Probe == ProbeInconclusive && e.Tested) {
			continue
		}
		parts = append(parts, e.Name+" ("+extensionState(e)+")")
	}
	line := strings.Join(parts, ", ")
	if len(r.UnknownExtensions) > 0 {
		if line != "" {
			line += "; "
		}
		line += "advertised outside the vocabulary: " + strings.Join(r.UnknownExtensions, ", ")
	}
	return line
}

// extensionState is "advertised, observed", "NOT advertised, observed",
// "advertised, ABSENT" and so on: capitals mark a disagreement.
func extensionState(e ExtensionResult) string {
	adv := "advertised"
	if !e.Advertised {
		adv = "NOT advertised"
	}
	probe := string(e.Probe)
	if e.Advertised && e.Probe == ProbeAbsent {
		probe = "ABSENT"
	}
	return adv + ", " + probe
}

// WriteMarkdown writes the full report as Markdown: verdicts, extensions,
// counts, a table of every requirement with its statement and status, and
// the evidence of each fail, lenient and warning finding.
func WriteMarkdown(w io.Writer, r *ConformanceReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# OIP conformance report: %s %s\n\n", r.Implementation.Name, r.Implementation.Version)
	fmt.Fprintf(&b, "| field | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| date | %s |\n| suite version | %s |\n| oipkit version | %s |\n| duration | %s |\n",
		r.Date.UTC().Format("2006-01-02T15:04:05Z"), r.SuiteVersion, r.OIPKitVersion, r.Duration)
	fmt.Fprintf(&b, "| HTTP target | %s |\n| gRPC target | %s |\n| features | %s (%s) |\n| strict | %v |\n\n",
		orNone(r.Targets.HTTP), orNone(r.Targets.GRPC), orNone(strings.Join(r.Features, ", ")), r.FeatureSource, r.Strict)
	if r.Incomplete {
		fmt.Fprintf(&b, "**Run incomplete:** %s\n\n", mdEscape(r.Problem))
	}
	b.WriteString("## Profiles\n\n| profile | verdict | summary |\n|---|---|---|\n")
	for _, p := range r.Profiles {
		fmt.Fprintf(&b, "| %s | **%s** | %s |\n", p.Name, p.Verdict, mdEscape(p.Summary))
	}
	writeExtensionsTable(&b, r)
	fmt.Fprintf(&b, "\n## Requirements\n\n%s\n\n", countLine(r.Counts))
	fmt.Fprintf(&b, "**%d distinct defect(s)**%s.\n\n", r.DistinctDefects(), blockedNote(r))
	b.WriteString("A **lenient** requirement is a rule the spec puts on clients that the server does not enforce; " +
		"lenient and warning requirements fail a verdict only under `--strict`. " +
		"A **blocked** requirement is not graded: every check of it failed on an answer that already fails the requirement named " +
		"(a 500 fails one rule, not every rule about the content it lacks); it never counts as failed nor passes, " +
		"and makes its profile at best inconclusive.\n\n")
	b.WriteString("| requirement | level | binds | status | statement | detail |\n|---|---|---|---|---|---|\n")
	for _, q := range r.Requirements {
		detail := q.Reason
		if len(q.Findings) > 0 && q.Status != StatusBlocked {
			detail = firstLine(q.Findings[0].Message)
			if n := len(q.Findings); n > 1 {
				detail += fmt.Sprintf(" (and %d more)", n-1)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", q.ID, q.Level, q.Binds, statusCell(q.Status),
			mdEscape(q.Statement), mdEscape(truncate(detail, 200)))
	}
	var withFindings []RequirementResult
	for _, q := range r.Requirements {
		if len(q.Findings) > 0 {
			withFindings = append(withFindings, q)
		}
	}
	if len(withFindings) > 0 {
		b.WriteString("\n## Evidence\n")
		for _, q := range withFindings {
			for _, f := range q.Findings {
				fmt.Fprintf(&b, "\n### %s (%s) — %s\n\n%s\n\nSpec: %s\n\n```\n%s\n```\n",
					q.ID, q.Level, f.Class, mdEscape(q.Statement), mdEscape(f.Spec), strings.ReplaceAll(f.Message, "```", "'''"))
				if f.Evidence != nil {
					fmt.Fprintf(&b, "\nSent:\n\n```\n%s```\n\nReceived:\n\n```\n%s```\n", messageText(f.Evidence.Request), messageText(f.Evidence.Response))
				}
				if cmd := f.ReproducerFor(r.Targets); cmd != "" {
					fence := codeFence(cmd)
					fmt.Fprintf(&b, "\nReproducer:\n\n%ssh\n%s\n%s\n", fence, cmd, fence)
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeExtensionsTable lists every extension the server advertised or the
// suite observed, and the advertised names outside the vocabulary.
func writeExtensionsTable(b *strings.Builder, r *ConformanceReport) {
	var rows []ExtensionResult
	for _, e := range r.Extensions {
		if e.Advertised || e.Probe == ProbeObserved || (e.Probe == ProbeAbsent || e.Probe == ProbeInconclusive) && e.Tested {
			rows = append(rows, e)
		}
	}
	if len(rows) == 0 && len(r.UnknownExtensions) == 0 {
		return
	}
	b.WriteString("\n## Extensions\n\nEvery extension the suite has a probe for is probed, advertised or not; its specs run when it is advertised or observed.\n\n")
	b.WriteString("| extension | advertised | probe | specs ran | detail |\n|---|---|---|---|---|\n")
	for _, e := range rows {
		adv := "yes"
		if !e.Advertised {
			adv = "**no**"
		}
		if len(e.Capabilities) > 0 {
			adv += " (" + strings.Join(e.Capabilities, ", ") + ")"
		}
		probe := string(e.Probe)
		if e.Advertised && e.Probe == ProbeAbsent || !e.Advertised && e.Probe == ProbeObserved {
			probe = "**" + probe + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %v | %s |\n", e.Name, adv, probe, e.Tested, mdEscape(e.Detail))
	}
	if len(r.UnknownExtensions) > 0 {
		fmt.Fprintf(b, "\nAdvertised names outside the vocabulary (not tested): %s\n", mdEscape(strings.Join(r.UnknownExtensions, ", ")))
	}
}

// statusCell renders a status, bold when it calls for attention.
func statusCell(s Status) string {
	switch s {
	case StatusFailed, StatusLenient, StatusNotRun:
		return "**" + string(s) + "**"
	case StatusBlocked:
		return "blocked"
	}
	return string(s)
}

// messageText renders one side of an exchange like a wire dump, for a
// Markdown code block.
func messageText(m Message) string {
	return strings.ReplaceAll(wireText(m), "```", "'''")
}

// wireText renders one side of an exchange like a wire dump: the request
// or status line, the headers, a blank line and the body.
func wireText(m Message) string {
	var b strings.Builder
	switch {
	case m.Method != "" || m.Target != "":
		fmt.Fprintf(&b, "%s %s\n", m.Method, m.Target)
	}
	if m.Status != "" {
		fmt.Fprintf(&b, "%s\n", m.Status)
	}
	for _, k := range sortedKeys(m.Header) {
		for _, v := range m.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	if m.Body != "" {
		fmt.Fprintf(&b, "\n%s\n", m.Body)
	}
	if m.BodyBytes > len(m.Body) {
		fmt.Fprintf(&b, "(%d bytes in all)\n", m.BodyBytes)
	}
	return b.String()
}

// blockedNote is ", N requirement(s) blocked by them" when any is, else "".
func blockedNote(r *ConformanceReport) string {
	if n := r.Counts[StatusBlocked]; n > 0 {
		return fmt.Sprintf(" (%d failed requirement(s); %d more blocked by them, not graded)", r.Counts[StatusFailed], n)
	}
	return ""
}

func countLine(c map[Status]int) string {
	parts := make([]string, 0, len(Statuses))
	for _, s := range Statuses {
		parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
	}
	return strings.Join(parts, ", ")
}

// classWord is the class as the text summary prints it.
func classWord(c Class) string {
	switch c {
	case ClassFail:
		return "FAIL"
	case ClassLenient:
		return "LENIENT"
	}
	return "WARN"
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// codeFence is a Markdown fence longer than any run of backticks in s, so
// a command shows exactly as it is (the reader copies it).
func codeFence(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// idList joins ids, perLine to a line (continuation lines indented).
func idList(ids []string, perLine int) string {
	var b strings.Builder
	for i, id := range ids {
		switch {
		case i == 0:
		case i%perLine == 0:
			b.WriteString(",\n          ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(id)
	}
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
