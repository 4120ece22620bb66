package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/reports"
)

// Report entry names. The report builder reads these entries back from the
// ginkgo report; they are the only channel from a spec to the report.
const (
	entryFailure = "oipkit.failure"
	entryWarning = "oipkit.warning"
	entryNote    = "oipkit.note"
)

// finding is the outcome of one check against one requirement. A nil err is
// a passed check. Check helpers build findings; only [grade] turns them into
// failures or warnings.
type finding struct {
	req string // requirement ID; "" means every requirement of the spec
	err error
	// soft says why this deviation is only a warning whatever the
	// requirement's level: a catalog ambiguity (e.g. "A-18") or the weaker
	// requirement the check really falls under. "" grades by the
	// requirement's level.
	soft string
	// hard says why this deviation fails whatever the requirement's level:
	// the catalog grades it FAIL (e.g. a 5xx for a malformed request,
	// OIP-REST-ERR-003). It wins over soft.
	hard string
	ev   *reports.Evidence
}

// on is a finding for req from err, with the evidence of the exchange that
// produced it.
func on(req string, ev evidencer, err error) finding {
	return finding{req: req, err: err, ev: evidenceOf(ev)}
}

// softOn is like on but graded as a warning (unless strict) because amb (a
// catalog ambiguity, or a weaker requirement) tolerates the deviation.
func softOn(req, amb string, ev evidencer, err error) finding {
	return finding{req: req, err: err, soft: amb, ev: evidenceOf(ev)}
}

// hardOn is like on but always graded as a failure, because the catalog
// (why) grades this deviation FAIL whatever the requirement's level.
func hardOn(req, why string, ev evidencer, err error) finding {
	return finding{req: req, err: err, hard: why, ev: evidenceOf(ev)}
}

// entry is the value of an oipkit.failure or oipkit.warning report entry.
type entry struct {
	Req       string
	Message   string
	Ambiguity string
	Evidence  *reports.Evidence
}

// String renders the entry for ginkgo's own output.
func (e entry) String() string { return e.Req + ": " + e.Message }

// note records an informational observation about req (for example which
// version a server chose); notes never affect a verdict.
func note(req, format string, args ...any) {
	AddReportEntry(entryNote, entry{Req: req, Message: fmt.Sprintf(format, args...)}, ReportEntryVisibilityNever)
}

// grade is the single assertion of the suite. Every failed finding is
// recorded as a report entry. A finding fails the spec when it is for a
// blocking requirement (MUST, or any requirement when strict) and not
// softened by an ambiguity, when the catalog grades that deviation FAIL
// whatever the level (hard), or when the check could not be made at all
// (req "": no answer, or the server stopped being live). Every other
// finding is a warning. All findings are recorded before failing, so one
// spec reports every deviation it saw.
func grade(fs ...finding) {
	labels := CurrentSpecReport().Labels()
	var failures []string
	for _, f := range fs {
		// A finding for a requirement the spec is not labelled with would
		// be reported under the wrong spec, or dropped when the
		// requirement has no spec of its own: a bug in the suite.
		if f.req != "" && !slices.Contains(labels, labelKeyReq+f.req) {
			Fail(fmt.Sprintf("conformance suite bug: a check of %s ran in a spec not labelled with it (labels %v)", f.req, labels), 1)
		}
		if f.err == nil {
			continue
		}
		e := entry{Req: f.req, Message: f.err.Error(), Ambiguity: f.soft, Evidence: f.ev}
		if f.hard != "" {
			e.Message += " (graded FAIL whatever the level: " + f.hard + ")"
			e.Ambiguity = ""
		}
		if isFailure(f) {
			AddReportEntry(entryFailure, e, ReportEntryVisibilityNever)
			failures = append(failures, describe(f))
			continue
		}
		AddReportEntry(entryWarning, e, ReportEntryVisibilityNever)
		GinkgoWriter.Printf("WARNING %s\n", describe(f))
	}
	if len(failures) > 0 {
		Fail(strings.Join(failures, "\n"), 1)
	}
}

func isFailure(f finding) bool {
	if f.req == "" || f.hard != "" || isNoAnswer(f.err) || tgt == nil || tgt.opts.Strict {
		return true
	}
	if f.soft != "" {
		return false
	}
	r, ok := catalog.Get(f.req)
	return !ok || r.Level.Blocking()
}

func describe(f finding) string {
	var b strings.Builder
	if f.req != "" {
		fmt.Fprintf(&b, "%s: ", f.req)
	}
	b.WriteString(f.err.Error())
	switch {
	case f.hard != "":
		fmt.Fprintf(&b, " (a failure whatever the level: %s)", f.hard)
	case f.soft != "":
		fmt.Fprintf(&b, " (tolerated by %s)", f.soft)
	}
	if f.ev != nil {
		fmt.Fprintf(&b, "\n  sent: %s %s", f.ev.Request.Method, f.ev.Request.Target)
		if f.ev.Response.Status != "" {
			fmt.Fprintf(&b, "\n  got:  %s %s", f.ev.Response.Status, clip(f.ev.Response.Body, 300))
		}
	}
	return b.String()
}

// errs joins non-nil errors into one, one per line; nil if there are none.
func errs(list ...error) error {
	return errors.Join(list...)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
