package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/oipkit/oipkit/verdict"
)

// APIVersion and Kind identify the report format. v1alpha2 added finding
// classes (fail, lenient, warning) in place of grades, the lenient and
// not-run statuses, each requirement's statement, and the extensions'
// advertised-versus-observed record; v1alpha1 reports are still read.
const (
	APIVersion = "oipkit.dev/v1alpha2"
	Kind       = "ConformanceReport"
)

// apiVersionV1Alpha1 is the previous format, whose findings carry "grade".
const apiVersionV1Alpha1 = "oipkit.dev/v1alpha1"

// Status is the outcome of one requirement in one run. The set is closed.
type Status string

// The requirement outcomes.
const (
	// StatusPassed: every spec checking the requirement ran and passed.
	StatusPassed Status = "passed"
	// StatusFailed: a check of the requirement found a fail: the server
	// broke a rule the spec puts on servers (a MUST, or a deviation the
	// catalog grades fail whatever the level, such as a 5xx for a
	// malformed request, OIP-REST-ERR-003), or gave no answer.
	StatusFailed Status = "failed"
	// StatusBlocked: every failing check of the requirement failed on an
	// exchange whose answer as a whole already fails another requirement
	// (its cause, named in BlockedBy): a 500 for a request is one defect,
	// not one per rule the missing answer could not show. The requirement
	// is not graded, like not-run: it never counts as failed and never
	// passes, and a profile with a blocked requirement is at best inconclusive
	// (its cause fails the profile that holds it). Its findings are kept as
	// evidence.
	StatusBlocked Status = "blocked"
	// StatusLenient: the server accepted a request that breaks a rule the
	// spec puts on clients (a string dimension, mixed raw and typed
	// contents). It fails a verdict only under --strict.
	StatusLenient Status = "lenient"
	// StatusWarning: a check found a difference stock clients tolerate: a
	// SHOULD, MAY or implied requirement, or a deviation an ambiguity of the
	// spec allows. It fails a verdict only under --strict.
	StatusWarning Status = "warning"
	// StatusSkipped: a spec could not run, for example because a fixture
	// model is not deployed. Skips make a profile inconclusive, and outrank
	// lenient and warning findings (which are still listed).
	StatusSkipped Status = "skipped"
	// StatusNotRun: a spec was not run because the run could not reach it:
	// a route it needs does not answer, or the run ended early. The run is
	// incomplete.
	StatusNotRun Status = "not-run"
	// StatusNotSupported: the server does not support the feature the
	// requirement needs, or the requirement's transport was not targeted.
	StatusNotSupported Status = "not-supported"
	// StatusNotCovered: no spec checks the requirement (a waiver may say why).
	StatusNotCovered Status = "not-covered"
)

// Statuses lists every status in report order.
var Statuses = []Status{StatusPassed, StatusFailed, StatusBlocked, StatusLenient, StatusWarning, StatusSkipped, StatusNotRun, StatusNotSupported, StatusNotCovered}

// ConformanceReport is the result of one conformance run against one
// implementation.
type ConformanceReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Implementation identifies the server under test, from its server
	// metadata unless the user named it.
	Implementation Implementation `json:"implementation"`
	// SuiteVersion is the version of the requirement set (version.SuiteVersion).
	SuiteVersion string `json:"suiteVersion"`
	// OIPKitVersion is the version of the oipkit binary that ran the suite.
	OIPKitVersion string    `json:"oipkitVersion"`
	Date          time.Time `json:"date"`
	// Duration is the wall time of the run, e.g. "4.2s".
	Duration string  `json:"duration"`
	Targets  Targets `json:"targets"`
	// Features are the extensions treated as supported; FeatureSource says
	// where they came from: "discovered" (advertised in server metadata or
	// observed by a probe, see Extensions) or "flag".
	Features      []string `json:"features"`
	FeatureSource string   `json:"featureSource"`
	// Extensions records, for every extension of the vocabulary, whether
	// the server advertised it and what the suite's probe observed.
	Extensions []ExtensionResult `json:"extensions,omitempty"`
	// UnknownExtensions are advertised names outside the vocabulary (e.g.
	// KServe's "model_repository_extension"), as sent.
	UnknownExtensions []string `json:"unknownExtensions,omitempty"`
	// Fixtures maps each fixture model the suite looked for to whether it
	// is deployed.
	Fixtures map[string]bool `json:"fixtures,omitempty"`
	Strict   bool            `json:"strict"`
	// Incomplete is set when the run could not check everything it
	// should have: it ended early (the server stopped answering, the suite
	// was interrupted) or a route did not answer and the specs needing it
	// were not run. Problem says why.
	Incomplete   bool                `json:"incomplete,omitempty"`
	Problem      string              `json:"problem,omitempty"`
	Profiles     []ProfileResult     `json:"profiles"`
	Counts       map[Status]int      `json:"counts"`
	Requirements []RequirementResult `json:"requirements"`
}

// Implementation names the server under test.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Targets are the endpoints the suite spoke to; an empty field means the
// transport was not tested.
type Targets struct {
	HTTP string `json:"http,omitempty"`
	GRPC string `json:"grpc,omitempty"`
}

// ExtensionResult is what the run found out about one extension.
type ExtensionResult struct {
	Name string `json:"name"`
	// Advertised: server metadata lists it (possibly with capabilities,
	// "model_repository(unload_dependents)").
	Advertised   bool     `json:"advertised"`
	Capabilities []string `json:"capabilities,omitempty"`
	// Probe is what the suite's probe observed: ProbeObserved,
	// ProbeAbsent, ProbeInconclusive, or ProbeNone when the suite has no
	// probe (and no specs) for the extension.
	Probe ProbeOutcome `json:"probe"`
	// Detail says what the probe sent and saw, in one line.
	Detail   string    `json:"detail,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
	// Tested: the extension's specs ran (advertised, observed, or named by
	// --features).
	Tested bool `json:"tested"`
}

// ProbeOutcome is the result of probing one extension.
type ProbeOutcome string

// The probe outcomes.
const (
	// ProbeObserved: the extension works, advertised or not.
	ProbeObserved ProbeOutcome = "observed"
	// ProbeAbsent: the server answered, and not as the extension says.
	ProbeAbsent ProbeOutcome = "absent"
	// ProbeInconclusive: the probe could not tell (fixture missing, no
	// answer, transport not targeted).
	ProbeInconclusive ProbeOutcome = "inconclusive"
	// ProbeNone: the suite has no probe for this extension.
	ProbeNone ProbeOutcome = "not-probed"
)

// ProfileResult is the verdict of one conformance profile. Its Verdict is
// verdict.Pass (no blocking requirement failed and nothing was skipped),
// verdict.Failed (a requirement failed, or under --strict was lenient or
// warned), verdict.Inconclusive (nothing failed but applicable
// requirements were skipped, not run or blocked, so conformance is not
// established) or verdict.NotSupported (the profile's transport was not
// targeted or the server does not support its features).
type ProfileResult struct {
	Name     string         `json:"name"`
	Verdict  verdict.Status `json:"verdict"`
	Summary  string         `json:"summary"`
	Counts   map[Status]int `json:"counts"`
	Failed   []string       `json:"failed,omitempty"`  // requirements that failed
	Lenient  []string       `json:"lenient,omitempty"` // requirements the server was lenient about
	Warnings []string       `json:"warnings,omitempty"`
	Skipped  []string       `json:"skipped,omitempty"` // applicable requirements that were skipped
	NotRun   []string       `json:"notRun,omitempty"`  // applicable requirements that were not run
	Blocked  []string       `json:"blocked,omitempty"` // requirements not graded: their cause failed
}

// RequirementResult is the outcome of one catalog requirement.
type RequirementResult struct {
	ID        string `json:"id"`
	Level     string `json:"level"`
	Blocking  bool   `json:"blocking"`
	Transport string `json:"transport"`
	Extension string `json:"extension,omitempty"`
	// Statement is the catalog's one-line paraphrase of the obligation.
	Statement string `json:"statement,omitempty"`
	// Binds is whom the rule binds (server, client, both); Class the
	// finding class the catalog gives a failed check of it.
	Binds  string `json:"binds,omitempty"`
	Class  Class  `json:"class,omitempty"`
	Status Status `json:"status"`
	// Reason explains a skipped, not-run, not-supported, not-covered or
	// blocked status.
	Reason string `json:"reason,omitempty"`
	// BlockedBy are the failed requirements whose failures explain every
	// failing check of this one (status blocked), see [Block].
	BlockedBy []string `json:"blockedBy,omitempty"`
	// Specs are the full texts of the specs labelled with the requirement.
	Specs []string `json:"specs,omitempty"`
	// Findings are the failures and warnings recorded against it, each
	// with evidence.
	Findings []Finding `json:"findings,omitempty"`
	// Notes are informational observations (e.g. which version a server
	// chose when none was given).
	Notes []string `json:"notes,omitempty"`
}

// Class is the weight of a finding (catalog classes, see specs.Class).
type Class string

// The finding classes.
const (
	// ClassFail: the server broke a rule the spec puts on servers, or gave
	// no answer.
	ClassFail Class = "fail"
	// ClassLenient: the server accepted a request that breaks a rule the
	// spec puts on clients.
	ClassLenient Class = "lenient"
	// ClassWarning: a difference stock clients tolerate.
	ClassWarning Class = "warning"
)

// Finding is one failed check.
type Finding struct {
	Spec  string `json:"spec"`
	Class Class  `json:"class"`
	// Message says what was wrong: got X, want Y.
	Message string `json:"message"`
	// Ambiguity is the catalog §5 item (or the weaker requirement) that
	// makes this deviation a warning, if any (e.g. "A-18").
	Ambiguity string    `json:"ambiguity,omitempty"`
	Evidence  *Evidence `json:"evidence,omitempty"`
	// Scope is ScopeAnswer when the check failed on the answer as a whole
	// (no answer, an unusable one, a status other than the one required)
	// rather than on what the answer holds; see [Block].
	Scope string `json:"scope,omitempty"`
	// Reproducer is a copy-paste shell command sending the request again
	// (curl, or grpcurl with specs/proto); reports written before it
	// existed get one from the evidence ([Finding.ReproducerFor]).
	Reproducer string `json:"reproducer,omitempty"`
}

// UnmarshalJSON reads a finding, also from reports written before classes
// existed ("grade": "failure" or "warning").
func (f *Finding) UnmarshalJSON(b []byte) error {
	type plain Finding
	var v struct {
		plain
		Grade string `json:"grade"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Finding(v.plain)
	if f.Class == "" {
		switch v.Grade {
		case "failure":
			f.Class = ClassFail
		case "warning":
			f.Class = ClassWarning
		}
	}
	return nil
}

// ScopeAnswer marks a finding about the answer as a whole (Finding.Scope).
const ScopeAnswer = "answer"

// Evidence is what the suite sent and what came back.
type Evidence struct {
	Request  Message `json:"request"`
	Response Message `json:"response"`
}

// Message is one side of an exchange. Bodies are truncated to a few KiB;
// BodyBytes keeps the real size.
type Message struct {
	// Method is the HTTP method, or "RPC".
	Method string `json:"method,omitempty"`
	// Target is the HTTP path or the full gRPC method name.
	Target string `json:"target,omitempty"`
	// Status is "HTTP 400" or "gRPC INVALID_ARGUMENT: message", on responses.
	Status    string              `json:"status,omitempty"`
	Header    map[string][]string `json:"header,omitempty"`
	Body      string              `json:"body,omitempty"`
	BodyBytes int                 `json:"bodyBytes,omitempty"`
}

// Count returns the number of requirements with each status.
func Count(rs []RequirementResult) map[Status]int {
	m := make(map[Status]int, len(Statuses))
	for _, s := range Statuses {
		m[s] = 0
	}
	for _, r := range rs {
		m[r.Status]++
	}
	return m
}

// Requirement returns the result for id.
func (r *ConformanceReport) Requirement(id string) (RequirementResult, bool) {
	for _, q := range r.Requirements {
		if q.ID == id {
			return q, true
		}
	}
	return RequirementResult{}, false
}

// WithStatus lists the IDs of requirements with status s, sorted.
func (r *ConformanceReport) WithStatus(s Status) []string {
	var ids []string
	for _, q := range r.Requirements {
		if q.Status == s {
			ids = append(ids, q.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// Validate checks the fields every report must have.
func (r *ConformanceReport) Validate() error {
	switch {
	case r.APIVersion != APIVersion && r.APIVersion != apiVersionV1Alpha1:
		return fmt.Errorf("apiVersion %q, want %q", r.APIVersion, APIVersion)
	case r.Kind != Kind:
		return fmt.Errorf("kind %q, want %q", r.Kind, Kind)
	case r.Implementation.Name == "":
		return fmt.Errorf("implementation name is empty")
	}
	for _, q := range r.Requirements {
		known := false
		for _, s := range Statuses {
			known = known || q.Status == s
		}
		if !known {
			return fmt.Errorf("requirement %s: unknown status %q", q.ID, q.Status)
		}
		if q.Status == StatusBlocked {
			if len(q.BlockedBy) == 0 {
				return fmt.Errorf("requirement %s: blocked, but by no requirement", q.ID)
			}
			for _, id := range q.BlockedBy {
				if c, ok := r.Requirement(id); !ok || c.Status != StatusFailed {
					return fmt.Errorf("requirement %s: blocked by %s, which did not fail", q.ID, id)
				}
			}
		}
		for _, f := range q.Findings {
			if f.Class != ClassFail && f.Class != ClassLenient && f.Class != ClassWarning {
				return fmt.Errorf("requirement %s: finding %q has unknown class %q", q.ID, firstLine(f.Message), f.Class)
			}
		}
	}
	return nil
}

// Verdict is the run's verdict, the worst of its profiles': failed when
// any profile failed, even if another is inconclusive; inconclusive when
// none failed but some are; pass when the rest passed; not-supported when
// every profile is; "" without profiles. An incomplete run is not-run.
func (r *ConformanceReport) Verdict() verdict.Status {
	if r.Incomplete {
		return verdict.NotRun
	}
	rank := map[verdict.Status]int{verdict.NotSupported: 1, verdict.Pass: 2, verdict.Inconclusive: 3, verdict.Failed: 4}
	var worst verdict.Status
	for _, p := range r.Profiles {
		if rank[p.Verdict] > rank[worst] {
			worst = p.Verdict
		}
	}
	return worst
}

// ExitCode is the exit status of the run's verdict (package verdict): 0
// when every profile passed or is not supported, 3 when any failed, 4 when
// none failed but some are inconclusive, 2 for an incomplete run.
func (r *ConformanceReport) ExitCode() int { return r.Verdict().ExitCode() }
