package conformance

import (
	"fmt"
	"io"
	"strings"

	"github.com/oipkit/oipkit/conformance/report"
)

// WriteStepSummary writes the short Markdown summary CI shows on the run's
// page (GitHub Actions' step summary): the overall result, the profiles,
// the counts, the extensions, and one line per failed, lenient and warning
// requirement with its statement and first finding.
func WriteStepSummary(w io.Writer, r *report.ConformanceReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## OIP conformance: %s %s — %s\n\n", mdCell(r.Implementation.Name), mdCell(r.Implementation.Version), strings.ToUpper(string(r.Verdict())))
	fmt.Fprintf(&b, "Targets: http=%s grpc=%s · features (%s): %s · strict=%v · oipkit %s · %s\n\n",
		orDash(r.Targets.HTTP), orDash(r.Targets.GRPC), r.FeatureSource, orDash(strings.Join(r.Features, ", ")), r.Strict, r.OIPKitVersion, r.Duration)
	if r.Incomplete {
		fmt.Fprintf(&b, "**Run incomplete:** %s\n\n", mdCell(r.Problem))
	}
	b.WriteString("| profile | verdict | summary |\n|---|---|---|\n")
	for _, p := range r.Profiles {
		fmt.Fprintf(&b, "| %s | **%s** | %s |\n", p.Name, p.Verdict, mdCell(p.Summary))
	}
	var counts []string
	for _, s := range report.Statuses {
		counts = append(counts, fmt.Sprintf("%d %s", r.Counts[s], s))
	}
	fmt.Fprintf(&b, "\nRequirements: %s; %d distinct defect(s).\n", strings.Join(counts, ", "), r.DistinctDefects())
	var exts []string
	for _, e := range r.Extensions {
		if e.Advertised || e.Probe == report.ProbeObserved {
			adv := "advertised"
			if !e.Advertised {
				adv = "**not advertised**"
			}
			probe := string(e.Probe)
			if e.Advertised && e.Probe == report.ProbeAbsent {
				probe = "**absent**"
			}
			exts = append(exts, fmt.Sprintf("%s (%s, %s)", e.Name, adv, probe))
		}
	}
	if len(exts) > 0 || len(r.UnknownExtensions) > 0 {
		fmt.Fprintf(&b, "\nExtensions: %s", orDash(strings.Join(exts, ", ")))
		if len(r.UnknownExtensions) > 0 {
			fmt.Fprintf(&b, "; advertised outside the vocabulary: %s", mdCell(strings.Join(r.UnknownExtensions, ", ")))
		}
		b.WriteString(".\n")
	}
	for _, s := range []report.Status{report.StatusFailed, report.StatusBlocked, report.StatusLenient, report.StatusWarning, report.StatusNotRun, report.StatusSkipped} {
		ids := r.WithStatus(s)
		if len(ids) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n<details%s><summary>%d %s</summary>\n\n", openIf(s == report.StatusFailed), len(ids), s)
		for _, id := range ids {
			q, _ := r.Requirement(id)
			detail := q.Reason
			if len(q.Findings) > 0 && q.Status != report.StatusBlocked {
				detail, _, _ = strings.Cut(q.Findings[0].Message, "\n")
			}
			fmt.Fprintf(&b, "- **%s** (%s): %s — %s\n", q.ID, q.Level, mdCell(q.Statement), mdCell(oneLine(detail, 240)))
		}
		b.WriteString("\n</details>\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func openIf(b bool) string {
	if b {
		return " open"
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdCell makes s safe inside a Markdown table cell or list item.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "<", "&lt;")
	return strings.ReplaceAll(s, "\n", " ")
}
