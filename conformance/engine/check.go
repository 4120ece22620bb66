package engine

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Report entry names. The report builder reads these entries back from the
// ginkgo report; they are the only channel from a spec to the report.
const (
	EntryFinding = "oipkit.finding"
	EntryNote    = "oipkit.note"
)

// EntryValue is the value of an oipkit.finding or oipkit.note report entry. Req
// "" means every requirement the spec is labelled with.
type EntryValue struct {
	Req       string
	Class     report.Class // findings only
	Message   string
	Ambiguity string
	Evidence  *report.Evidence
	// Scope is report.ScopeAnswer for a finding about the answer as a
	// whole (findings only).
	Scope string
	// Reproducer sends the request again (findings only, reproducer.go).
	Reproducer string
}

// String renders the entry for ginkgo's own output.
func (e EntryValue) String() string { return e.Req + ": " + e.Message }

// grading says how a failed check is graded when the requirement's catalog
// class is not the whole story. Matchers set it for the failure they found
// (a 5xx is a server fault whatever the requirement, an accepted bad
// request is a negative result); a Check sets it for the spec's reasons
// (an ambiguity that tolerates the deviation).
type grading struct {
	// hard: graded fail whatever the requirement, for this reason (the
	// catalog grades a 5xx for a malformed request FAIL, OIP-REST-ERR-003).
	hard string
	// soft: graded warning whatever the requirement, because this catalog
	// ambiguity (or weaker requirement) tolerates the deviation.
	soft string
	// fault: a server fault graded by the requirement's level, whatever
	// whom the rule binds (a 5xx where the requirement's test asks for a
	// 4xx).
	fault bool
	// negative: the server accepted a request that breaks the rule. Lenient
	// when the rule binds clients (alone or with servers).
	negative bool
	// noAnswer: no usable answer (no response, an unreadable one); fail.
	noAnswer bool
	// answer: the failure is about the answer as a whole (no answer, an
	// error status where success was required, a 5xx, a body that is not
	// an answer), which explains the failures of checks of its content
	// under other requirements (report.Block).
	answer bool
}

// Check is one check of one requirement: the spec's own, or the one
// [VerifyReq] names.
type Check struct {
	req    string
	actual any
	ev     Evidencer
	g      grading
}

// Verify starts a check, on actual, of the requirement the running spec is
// labelled with; actual is usually an [*Exchange] or a [*Call], which is also
// the evidence recorded with a finding:
//
//	It("echoes the request id", Req("OIP-REST-INFER-006"), func(ctx SpecContext) {
//		Verify(e).To(HaveJSONString("id", "42"))
//	})
//
// The ID is written once, in the label. A spec labelled with several
// requirements names the one each check grades with [VerifyReq]; Verify
// there fails the spec as a suite bug.
//
// To grades and records a failure and returns false, so that a spec can
// stop when a precondition failed; the spec fails, if the finding's class
// says so, only after all its checks ran.
func Verify(actual any) *Check {
	reqs := specReqs()
	if len(reqs) != 1 {
		ginkgo.Fail(fmt.Sprintf("conformance suite bug: Verify in a spec labelled with %d requirements %v: name the one this check grades with VerifyReq(id, x)", len(reqs), reqs), 1)
	}
	return newCheck(reqs[0], actual)
}

// VerifyReq starts a check of requirement req on actual in a spec labelled
// with several requirements; req must be one of them. In a spec labelled
// with one requirement it fails the spec as a suite bug: the label names
// it, and [Verify] checks it.
func VerifyReq(req string, actual any) *Check {
	reqs := specReqs()
	switch {
	case len(reqs) < 2:
		ginkgo.Fail(fmt.Sprintf("conformance suite bug: VerifyReq(%q, …) in a spec labelled with %v: its one requirement is checked with Verify(x)", req, reqs), 1)
	case !slices.Contains(reqs, req):
		ginkgo.Fail(fmt.Sprintf("conformance suite bug: a check of %s in a spec not labelled with it (requirements %v)", req, reqs), 1)
	}
	return newCheck(req, actual)
}

func newCheck(req string, actual any) *Check {
	c := &Check{req: req, actual: actual}
	if ev, ok := actual.(Evidencer); ok {
		c.ev = ev
	}
	return c
}

// primaryReq is the running spec's first-labelled requirement, its
// subject: a server that stops answering after the spec's request fails
// that one only (one that answers but says it is no longer live fails
// every requirement of the spec, and the cause rules pick one) (a spec labelled with the core's
// OIP-REST-ERR-003 beside its subject would otherwise give the cause to
// ERR-003 and report the subject blocked).
func primaryReq() string {
	for _, l := range ginkgo.CurrentSpecReport().Labels() { // in the order written
		if id, ok := strings.CutPrefix(l, LabelKeyReq); ok {
			return id
		}
	}
	return ""
}

// specReqs returns the requirements the running spec is labelled with: a
// finding under another one would be reported under the wrong spec, or
// dropped when the requirement has no spec of its own.
func specReqs() []string {
	return LabelValues(ginkgo.CurrentSpecReport().Labels(), LabelKeyReq)
}

// On sets the evidence when actual is a value taken from an exchange or a
// call (a string, a list) rather than the exchange itself.
func (c *Check) On(ev Evidencer) *Check {
	c.ev = ev
	return c
}

// Soft grades a failure of this check as a warning because why (a catalog
// ambiguity such as "A-18", or the weaker requirement the deviation really
// falls under) tolerates it.
func (c *Check) Soft(why string) *Check {
	c.g.soft = why
	return c
}

// Hard grades a failure of this check as fail whatever the requirement,
// because the catalog says so (why).
func (c *Check) Hard(why string) *Check {
	c.g.hard = why
	return c
}

// AsServerFault grades a failure by the requirement's level (fail for a
// MUST, warning below), whatever whom the rule binds: for a 5xx answer to a
// request whose requirement's own test asks for a 4xx.
func (c *Check) AsServerFault() *Check {
	c.g.fault = true
	return c
}

// To checks actual with m and records a finding when it does not match.
func (c *Check) To(m types.GomegaMatcher, description ...any) bool {
	return c.assert(m, true, description)
}

// NotTo checks that actual does not match m.
func (c *Check) NotTo(m types.GomegaMatcher, description ...any) bool {
	return c.assert(m, false, description)
}

func (c *Check) assert(m types.GomegaMatcher, positive bool, description []any) bool {
	if ra, ok := m.(requirementAware); ok {
		ra.forRequirement(c.req)
	}
	if !answeredOrRecord(c.req, c.actual, c.ev) {
		return false
	}
	ok := true
	g := gomega.NewGomega(func(message string, _ ...int) {
		ok = false
		gr := c.g
		if mg, isGraded := m.(gradedMatcher); isGraded && positive {
			mine := mg.grading()
			gr.negative, gr.noAnswer, gr.answer = mine.negative, mine.noAnswer, mine.answer
			if gr.hard == "" && gr.soft == "" {
				gr.hard, gr.soft = mine.hard, mine.soft
			}
		}
		recordFinding(c.req, message, gr, c.ev)
	})
	if positive {
		g.Expect(c.actual).To(m, description...)
	} else {
		g.Expect(c.actual).NotTo(m, description...)
	}
	return ok
}

// requirementAware is a matcher whose check depends on the requirement it
// is applied for ([MatchSchema] keeps the problems graded under it).
type requirementAware interface{ forRequirement(req string) }

// Answered records a failure of every requirement of the spec when x (an
// exchange or a call) got no usable answer, and reports whether it got one.
// A spec that only records notes uses it: a server must answer every
// request, with a result or an error.
func Answered(x Evidencer) bool { return answeredOrRecord("", x, x) }

func answeredOrRecord(req string, actual any, ev Evidencer) bool {
	for _, x := range []any{actual, ev} {
		var err error
		switch v := x.(type) {
		case *Exchange:
			if v != nil && v.Err != nil {
				if v.reported {
					return false
				}
				v.reported, err = true, v.noAnswer()
			}
		case *Call:
			if v != nil && GRPCNoAnswer(v.Err) != nil {
				if v.reported {
					return false
				}
				v.reported, err = true, v.noAnswer()
			}
		case *StreamCall:
			if v != nil && v.Err != nil {
				if v.reported {
					return false
				}
				v.reported, err = true, v.noAnswer()
			}
		}
		if err != nil {
			recordFinding(req, err.Error(), grading{noAnswer: true}, ev)
			return false
		}
	}
	return true
}

// Grade returns the class of a failed check of req (req "" means the whole
// spec, which only a missing answer or a server that stopped being live
// fails).
func classify(req string, g grading) report.Class {
	switch {
	case req == "" || g.noAnswer || g.hard != "":
		return report.ClassFail
	case g.soft != "":
		return report.ClassWarning
	}
	r, ok := Catalog().Get(req)
	switch {
	case !ok:
		return report.ClassFail
	case g.fault:
		return report.Class(specs.LevelClass(r.Level))
	case g.negative && r.Binds != specs.BindsServer:
		return report.ClassLenient
	}
	return report.Class(r.Class)
}

// specState is what the running spec has recorded: the findings that will
// fail it, and whether it was cut short as not run.
var specState struct {
	sync.Mutex
	pending []string
	notRun  bool
	// last is the last request the spec sent: when the server stops
	// answering after the spec, the request that killed it.
	last Evidencer
	// setup is what the reproducers of its findings make first.
	setup []replayStep
}

// Every spec starts clean and, after its body, fails with all the findings
// that fail it. ginkgo.DeferCleanup callbacks (the liveness check after a negative
// spec) run after ginkgo.AfterEach and flush their own findings.
var (
	_ = ginkgo.BeforeEach(func() {
		specState.Lock()
		specState.pending, specState.notRun, specState.last, specState.setup = nil, false, nil, nil
		specState.Unlock()
	})
	_ = ginkgo.AfterEach(flush)
)

// record is the one fail handler: it grades a failed check, records it as
// a report entry with its evidence, and keeps it for flush when its class
// fails the spec.
func recordFinding(req, message string, g grading, ev Evidencer) {
	class := classify(req, g)
	e := EntryValue{Req: req, Class: class, Message: message, Ambiguity: g.soft}
	if g.noAnswer || g.answer {
		e.Scope = report.ScopeAnswer
	}
	if g.hard != "" {
		e.Message += " (graded fail whatever the level: " + g.hard + ")"
		e.Ambiguity = ""
	}
	if ev != nil {
		e.Evidence = ev.Evidence()
		e.Reproducer = reproducer(ev)
	}
	ginkgo.AddReportEntry(EntryFinding, e, ginkgo.ReportEntryVisibilityNever)
	line := describe(e)
	if class == report.ClassFail || current != nil && current.Strict() {
		specState.Lock()
		specState.pending = append(specState.pending, line)
		specState.Unlock()
		return
	}
	ginkgo.GinkgoWriter.Printf("%s %s\n", strings.ToUpper(string(class)), line)
}

// flush fails the spec with every finding that fails it. A spec cut short
// as not run is not failed: its findings are in the report already.
func flush() {
	if current != nil {
		specState.Lock()
		notRun := specState.notRun
		specState.Unlock()
		current.checkReceived(notRun)
	}
	specState.Lock()
	p, notRun := specState.pending, specState.notRun
	specState.pending = nil
	specState.Unlock()
	if len(p) > 0 && !notRun {
		ginkgo.Fail(strings.Join(p, "\n"), 1)
	}
}

// sent notes ev as the last request the running spec sent.
func sent(ev Evidencer) {
	specState.Lock()
	specState.last = ev
	specState.Unlock()
}

// markNotRun notes that the running spec is being cut short as not run.
func markNotRun() {
	specState.Lock()
	specState.notRun = true
	specState.Unlock()
}

func describe(e EntryValue) string {
	var b strings.Builder
	if e.Req != "" {
		fmt.Fprintf(&b, "%s: ", e.Req)
	}
	b.WriteString(e.Message)
	if e.Ambiguity != "" {
		fmt.Fprintf(&b, " (tolerated by %s)", e.Ambiguity)
	}
	if ev := e.Evidence; ev != nil {
		fmt.Fprintf(&b, "\n  sent: %s %s", ev.Request.Method, ev.Request.Target)
		if ev.Response.Status != "" {
			fmt.Fprintf(&b, "\n  got:  %s %s", ev.Response.Status, clip(ev.Response.Body, 300))
		}
	}
	return b.String()
}

// Note records an informational observation about req (for example which
// version a server chose); notes never affect a verdict.
func Note(req, format string, args ...any) {
	ginkgo.AddReportEntry(EntryNote, EntryValue{Req: req, Message: fmt.Sprintf(format, args...)}, ginkgo.ReportEntryVisibilityNever)
}

// AfterNegative registers the check that follows a negative spec: the
// server must still answer its liveness probe as it did before the run. A
// failure is a finding of every requirement of the spec.
func AfterNegative() {
	spec := ginkgo.CurrentSpecReport().FullText()
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		current.stillLive(ctx, spec)
		flush()
	})
}

func (t *Target) stillLive(ctx context.Context, spec string) {
	if t.rest != nil {
		e := t.send(ctx, http.MethodGet, "/v2/health/live", nil, nil)
		switch {
		case e.Err != nil:
			t.died(spec, "GET /v2/health/live", e.Err, e)
			return
		case t.liveREST == http.StatusOK && e.Status != http.StatusOK:
			t.noteAnswer(nil, "")
			what, ev := lastRequest(e)
			recordFinding("", fmt.Sprintf("server is no longer live after %s (spec %q): GET /v2/health/live %s", what, spec, e.Got()), grading{}, ev)
			return
		}
		t.noteAnswer(nil, "")
	}
	if t.grpc != nil {
		resp := &pb.ServerLiveResponse{}
		c := t.call(ctx, methodPrefix+"ServerLive", &pb.ServerLiveRequest{}, resp)
		switch {
		case GRPCNoAnswer(c.Err) != nil:
			t.died(spec, "ServerLive", GRPCNoAnswer(c.Err), c)
			return
		case t.liveGRPC && (c.Err != nil || !resp.GetLive()):
			t.noteAnswer(nil, "")
			what, ev := lastRequest(c)
			recordFinding("", fmt.Sprintf("server is no longer live after %s (spec %q): ServerLive %s", what, spec, c.Got()), grading{}, ev)
			return
		}
		t.noteAnswer(nil, "")
	}
}

// died records that the liveness probe after spec got no answer: a
// failure of the spec's primary requirement, with the last request it sent
// as the evidence (the report's reproducer replays it). When the server
// answers no probe at all, the run ends at once: every remaining spec
// would only fail to get an answer, and is reported not run instead.
func (t *Target) died(spec, probe string, err error, probeEv Evidencer) {
	what, ev := lastRequest(probeEv)
	recordFinding(primaryReq(), fmt.Sprintf("server stopped answering after %s (spec %q): %s: %v", what, spec, probe, err), grading{noAnswer: true}, ev)
	if t.probeLive() {
		t.noteAnswer(err, probe)
		return
	}
	ginkgo.AbortSuite(fmt.Sprintf("server stopped answering after %s (spec %q); the remaining specs were not run", what, spec), 2)
}

// lastRequest describes the last request the running spec sent (method
// and path or RPC, and an excerpt of its body) and returns it as the
// evidence; without one, the liveness probe is the evidence.
func lastRequest(probe Evidencer) (string, Evidencer) {
	specState.Lock()
	last := specState.last
	specState.Unlock()
	var what string
	switch v := last.(type) {
	case *Exchange:
		what = v.What()
	case *Call:
		what = "RPC " + v.Name()
	case *StreamCall:
		what = "RPC ModelStreamInfer"
	default:
		return "the spec's requests", probe
	}
	if body, ok := sentBody(last); ok && len(body) > 0 {
		if printable(body) {
			what += " with body " + clipText(string(body), 200)
		} else {
			what += " with body " + hexClip(body, 64)
		}
	}
	return what, last
}
