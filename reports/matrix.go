package reports

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteMatrix writes a requirement × implementation compatibility matrix in
// Markdown: one row per requirement that appears in any report, one column per
// report (headed by implementation name and version), each cell the
// requirement's status in that report. Profile verdicts come first. Rows are
// sorted by requirement ID so that matrices diff cleanly.
func WriteMatrix(w io.Writer, rs []*ConformanceReport) error {
	if len(rs) == 0 {
		return fmt.Errorf("no reports")
	}
	var b strings.Builder
	b.WriteString("| |")
	for _, r := range rs {
		fmt.Fprintf(&b, " %s |", mdEscape(strings.TrimSpace(r.Implementation.Name+" "+r.Implementation.Version)))
	}
	b.WriteString("\n|---|")
	for range rs {
		b.WriteString("---|")
	}
	b.WriteString("\n")

	profiles := map[string]bool{}
	for _, r := range rs {
		for _, p := range r.Profiles {
			profiles[p.Name] = true
		}
	}
	for _, name := range sortedKeys(profiles) {
		fmt.Fprintf(&b, "| **%s** |", name)
		for _, r := range rs {
			cell := "—"
			for _, p := range r.Profiles {
				if p.Name == name {
					cell = "**" + string(p.Verdict) + "**"
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}

	ids := map[string]string{}
	for _, r := range rs {
		for _, q := range r.Requirements {
			ids[q.ID] = q.Level
		}
	}
	for _, id := range sortedKeys(ids) {
		fmt.Fprintf(&b, "| %s (%s) |", id, ids[id])
		for _, r := range rs {
			cell := "—"
			if q, ok := r.Requirement(id); ok {
				cell = matrixCell(q.Status)
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func matrixCell(s Status) string {
	switch s {
	case StatusPassed:
		return "✅ passed"
	case StatusFailed:
		return "❌ failed"
	case StatusWarning:
		return "⚠️ warning"
	case StatusSkipped:
		return "⏭ skipped"
	}
	return string(s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
