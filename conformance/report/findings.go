package report

import (
	"fmt"
	"io"
	"strings"
)

// Defect is one distinct defect of a report: a failed requirement once
// [Block] has taken the cascades out, so that each failed requirement fails
// on at least one exchange no other failed requirement explains. The
// findings file, the terminal summary and [ConformanceReport.DistinctDefects]
// count the same defects.
type Defect struct {
	// IDs are the requirements it breaks: the failed one.
	IDs []string
	// Checks are its fail findings, each with its requirement; the first
	// is the one its reproducer sends: the first whose reproducer is exact.
	Checks []DefectCheck
	// Blocked are the requirements it blocks ([Block]): not graded,
	// because every exchange they failed on fails this one.
	Blocked []string
}

// DefectCheck is one failed check of a defect.
type DefectCheck struct {
	Requirement RequirementResult
	Finding     Finding
}

// First is the check that stands for the defect: the first found.
func (d Defect) First() DefectCheck { return d.Checks[0] }

// Exchanges is the number of distinct exchanges its checks failed on.
func (d Defect) Exchanges() int {
	seen := map[string]bool{}
	for _, c := range d.Checks {
		seen[defectKey(c.Requirement, c.Finding)] = true
	}
	return len(seen)
}

// Defects lists the report's distinct defects, one per failed requirement,
// in report order, each with the requirements it blocks.
func Defects(r *ConformanceReport) []Defect {
	var ds []Defect
	for _, q := range r.Requirements {
		if q.Status != StatusFailed {
			continue
		}
		d := Defect{IDs: []string{q.ID}}
		for _, f := range failing(q) {
			d.Checks = append(d.Checks, DefectCheck{Requirement: q, Finding: f})
		}
		leadWithExact(d.Checks, r.Targets)
		for _, b := range r.Requirements {
			if b.Status == StatusBlocked && contains(b.BlockedBy, q.ID) {
				d.Blocked = append(d.Blocked, b.ID)
			}
		}
		ds = append(ds, d)
	}
	return ds
}

// leadWithExact moves to the front the first check whose reproducer sends
// the request exactly (not clipped to what the report keeps), so that the
// reproducer a defect is filed with shows it; the others keep their order.
func leadWithExact(cs []DefectCheck, t Targets) {
	for i, c := range cs {
		if cmd := c.Finding.ReproducerFor(t); cmd != "" && !strings.Contains(cmd, "NOT EXACT") {
			copy(cs[1:i+1], cs[:i])
			cs[0] = c
			return
		}
	}
}

// failing lists the findings that failed q: its fail findings, or under
// --strict its lenient and warning ones; a failure the suite could not
// attribute to a check is one finding of its reason.
func failing(q RequirementResult) []Finding {
	var fs []Finding
	for _, f := range q.Findings {
		if f.Class == ClassFail {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		fs = q.Findings
	}
	if len(fs) == 0 {
		fs = []Finding{{Class: ClassFail, Message: orNone(q.Reason)}}
	}
	return fs
}

// defectKey is what makes two failed checks one defect: the exchange they
// failed on, the request whole and the answer's status, Content-Type and
// body (its other headers, Date, X-Request-Id, differ between two
// sendings of one request). A finding without evidence is its own
// defect. This is the one place that decides what a distinct defect is.
func defectKey(q RequirementResult, f Finding) string {
	ev := f.Evidence
	if ev == nil {
		return "no evidence\x00" + q.ID + "\x00" + f.Spec + "\x00" + f.Message
	}
	var b strings.Builder
	req, resp := ev.Request, ev.Response
	fmt.Fprintf(&b, "%s\x00%s\x00%d\x00%s\x00", req.Method, req.Target, req.BodyBytes, req.Body)
	for _, k := range sortedKeys(req.Header) {
		fmt.Fprintf(&b, "%s=%q\x00", k, req.Header[k])
	}
	var contentType []string
	for k, v := range resp.Header {
		if strings.EqualFold(k, "Content-Type") {
			contentType = v
		}
	}
	fmt.Fprintf(&b, "%s\x00%q\x00%d\x00%s", resp.Status, contentType, resp.BodyBytes, resp.Body)
	return b.String()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Title is a one-line title for the defect, as for a bug tracker: what
// was sent and what came back, from the first check's message.
func (d Defect) Title() string {
	c := d.First()
	msg := firstLine(c.Finding.Message)
	if ev := c.Finding.Evidence; ev != nil {
		what := strings.TrimSpace(ev.Request.Method + " " + ev.Request.Target)
		if what != "" && !strings.HasPrefix(msg, ev.Request.Method+" ") && !strings.HasPrefix(msg, strings.TrimPrefix(ev.Request.Target, "/")) {
			msg = what + ": " + msg
		}
	}
	return clipText(msg, 140)
}

// expectation splits a check's message ("…: got 500 with body …, want
// 200") into what was observed and what was expected; ok is false when
// the message says no "want".
func expectation(msg string) (observed, expected string, ok bool) {
	line := firstLine(msg)
	for _, sep := range []string{", want ", "; want "} {
		if i := strings.LastIndex(line, sep); i >= 0 {
			return line[:i], line[i+len(sep):], true
		}
	}
	return line, "", false
}

// WriteFindings writes the findings file of a report: one entry per
// distinct defect ([Defects]), each written as an upstream bug report:
// title, the requirements' statements and sources quoted from the
// catalog (cite; nil quotes the report's statements), a reproducer, what
// was expected and observed, the affected requirement IDs and the
// runtime's name and version.
func WriteFindings(w io.Writer, r *ConformanceReport, cite Citer) error {
	ds := Defects(r)
	impl := strings.TrimSpace(r.Implementation.Name + " " + r.Implementation.Version)
	var b strings.Builder
	fmt.Fprintf(&b, "# Findings: %s\n\n", impl)
	fmt.Fprintf(&b, "Defects oipkit's Open Inference Protocol conformance suite (suite %s, oipkit %s) found in %s on %s",
		r.SuiteVersion, r.OIPKitVersion, impl, r.Date.UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, " (HTTP %s, gRPC %s). ", orNone(r.Targets.HTTP), orNone(r.Targets.GRPC))
	b.WriteString("One entry per distinct defect: each failed requirement once cascades are taken out (a requirement whose every failing " +
		"exchange fails another failed requirement is blocked by it, listed under it and not graded). An entry's reproducer sends its " +
		"first failing exchange; its other failing checks are listed. The reproducers send the request to the addresses of the run; " +
		"the gRPC ones read the proto from an oipkit checkout (run them from its root). " +
		"The full report, with every check, is report.md next to this file.\n\n")
	var failed []string
	for _, d := range ds {
		for _, id := range d.IDs {
			if !contains(failed, id) {
				failed = append(failed, id)
			}
		}
	}
	if len(ds) == 0 {
		b.WriteString("No requirement failed.\n")
	} else {
		fmt.Fprintf(&b, "%d distinct defect(s), one per failed requirement: %s.\n", len(ds), strings.Join(failed, ", "))
	}
	if n := r.Counts[StatusLenient] + r.Counts[StatusWarning]; n > 0 {
		fmt.Fprintf(&b, "\n%d lenient and %d warning requirement(s) are not listed here: they do not fail a verdict (report.md has them).\n",
			r.Counts[StatusLenient], r.Counts[StatusWarning])
	}
	for i, d := range ds {
		fmt.Fprintf(&b, "\n## %d. %s\n\n", i+1, mdInline(d.Title()))
		fmt.Fprintf(&b, "- **Runtime:** %s\n", impl)
		fmt.Fprintf(&b, "- **Affected requirements:** %s\n", strings.Join(d.IDs, ", "))
		if len(d.Blocked) > 0 {
			fmt.Fprintf(&b, "- **Blocked by it (not graded):** %s\n", strings.Join(d.Blocked, ", "))
		}
		b.WriteString("\n**Specification:**\n\n")
		for _, id := range d.IDs {
			q, _ := r.Requirement(id)
			ct := Citation{Level: q.Level, Statement: q.Statement}
			if cite != nil {
				if c, ok := cite(id); ok {
					ct = c
				}
			}
			fmt.Fprintf(&b, "> **%s** (%s): %s\n", id, ct.Level, mdInline(ct.Statement))
			if ct.Source != "" {
				fmt.Fprintf(&b, "> — %s\n", mdInline(ct.Source))
			}
			b.WriteString(">\n")
		}
		trimQuoteEnd(&b)
		c := d.First()
		if cmd := c.Finding.ReproducerFor(r.Targets); cmd != "" {
			fence := codeFence(cmd)
			fmt.Fprintf(&b, "\n**Reproducer:**\n\n%ssh\n%s\n%s\n", fence, cmd, fence)
		}
		b.WriteString("\n**Expected:**\n\n")
		seen := map[string]bool{}
		for _, k := range d.Checks {
			_, want, ok := expectation(k.Finding.Message)
			if !ok {
				want = k.Requirement.Statement
			}
			line := fmt.Sprintf("- %s: %s\n", k.Requirement.ID, mdInline(clipText(want, 300)))
			if !seen[line] {
				seen[line] = true
				b.WriteString(line)
			}
		}
		b.WriteString("\n**Observed:**\n\n")
		if ev := c.Finding.Evidence; ev != nil {
			fmt.Fprintf(&b, "```\n%s```\n\n", messageText(ev.Response))
		} else {
			fmt.Fprintf(&b, "%s\n\n", mdInline(clipText(firstLine(c.Finding.Message), 300)))
		}
		if n := d.Exchanges(); n > 1 {
			fmt.Fprintf(&b, "**Failed checks** (on %d exchanges; report.md has each one's request and answer):\n\n", n)
		} else {
			b.WriteString("**Failed checks:**\n\n")
		}
		for _, k := range d.Checks {
			fmt.Fprintf(&b, "- %s: %s\n", k.Requirement.ID, mdInline(k.Finding.Spec))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// trimQuoteEnd drops the empty quote line that ends a run of quoted
// requirements.
func trimQuoteEnd(b *strings.Builder) {
	s := b.String()
	if t, ok := strings.CutSuffix(s, ">\n"); ok {
		b.Reset()
		b.WriteString(t)
	}
}

// mdInline makes s safe inside one Markdown line.
func mdInline(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.ReplaceAll(s, "\n", " ")
}

// clipText shortens s to about n bytes on a character boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// shownDefects picks the first limit defects for a summary, and says how
// many it left out.
func shownDefects(ds []Defect, limit int) ([]Defect, int) {
	if len(ds) <= limit {
		return ds, 0
	}
	return ds[:limit], len(ds) - limit
}
