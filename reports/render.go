package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes the human summary printed at the end of a run: the
// implementation, the profile verdicts, the counts, and one line per failure
// and warning.
func WriteText(w io.Writer, r *ConformanceReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "OIP conformance: %s %s (suite %s, oipkit %s, %s)\n",
		r.Implementation.Name, r.Implementation.Version, r.SuiteVersion, r.OIPKitVersion, r.Duration)
	fmt.Fprintf(&b, "targets: http=%s grpc=%s; features (%s): %s; strict=%v\n",
		orNone(r.Targets.HTTP), orNone(r.Targets.GRPC), r.FeatureSource, orNone(strings.Join(r.Features, ",")), r.Strict)
	if r.Incomplete {
		fmt.Fprintf(&b, "RUN INCOMPLETE: %s\n", r.Problem)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, p := range r.Profiles {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, strings.ToUpper(string(p.Verdict)), p.Summary)
	}
	tw.Flush()
	fmt.Fprintf(&b, "requirements: %s\n", countLine(r.Counts))
	skips := map[string][]string{} // reason → requirement IDs
	var reasons []string
	for _, q := range r.Requirements {
		for _, f := range q.Findings {
			fmt.Fprintf(&b, "  %-7s %s [%s]: %s\n", gradeWord(f.Grade), q.ID, q.Level, firstLine(f.Message))
		}
		if q.Status == StatusSkipped {
			if len(skips[q.Reason]) == 0 {
				reasons = append(reasons, q.Reason)
			}
			skips[q.Reason] = append(skips[q.Reason], q.ID)
		}
	}
	for _, why := range reasons {
		ids := skips[why]
		list := strings.Join(ids, ", ")
		if len(ids) > 6 {
			list = strings.Join(ids[:6], ", ") + fmt.Sprintf(" and %d more", len(ids)-6)
		}
		fmt.Fprintf(&b, "  SKIPPED %s: %s\n", why, list)
	}
	for _, p := range r.Profiles {
		if p.Verdict == VerdictPartial {
			fmt.Fprintf(&b, "NOTE: profile %s is PARTIAL: %d applicable requirement(s) were skipped; conformance is not established\n", p.Name, len(p.Skipped))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the full report as Markdown: verdicts, counts, and a
// table of every requirement with its status, followed by the evidence of
// each failure and warning.
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
	fmt.Fprintf(&b, "\n## Requirements\n\n%s\n\n| requirement | level | status | detail |\n|---|---|---|---|\n", countLine(r.Counts))
	for _, q := range r.Requirements {
		detail := q.Reason
		if len(q.Findings) > 0 {
			detail = firstLine(q.Findings[0].Message)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", q.ID, q.Level, q.Status, mdEscape(truncate(detail, 200)))
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
				fmt.Fprintf(&b, "\n### %s (%s) — %s\n\nSpec: %s\n\n```\n%s\n```\n", q.ID, q.Level, f.Grade, mdEscape(f.Spec), f.Message)
				if f.Evidence != nil {
					fmt.Fprintf(&b, "\nSent:\n\n```\n%s```\n\nReceived:\n\n```\n%s```\n", messageText(f.Evidence.Request), messageText(f.Evidence.Response))
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// messageText renders one side of an exchange like a wire dump.
func messageText(m Message) string {
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
	return strings.ReplaceAll(b.String(), "```", "'''")
}

func countLine(c map[Status]int) string {
	parts := make([]string, 0, len(Statuses))
	for _, s := range Statuses {
		parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
	}
	return strings.Join(parts, ", ")
}

func gradeWord(g Grade) string {
	if g == GradeFailure {
		return "FAIL"
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
