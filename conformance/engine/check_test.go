package engine

import (
	"strings"
	"sync"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
)

// Specs of the engine's own checks, run by TestCheckNamesItsRequirement (the
// only RunSpecs of this package): each names its requirement rightly or
// wrongly, and the test reads how each ended.
const (
	reqA = "OIP-REST-INFER-006" // MUST, binds servers: a failed check is graded fail
	reqB = "OIP-REST-INFER-001"
	reqC = "OIP-REST-SMETA-003"
)

var _ = ginkgo.Describe("checks", func() {
	ginkgo.It("one requirement, Verify passes", Req(reqA), func() {
		Verify("x").To(gomega.Equal("x"))
	})
	ginkgo.It("one requirement, Verify fails", Req(reqA), func() {
		Verify("x").To(gomega.Equal("y"))
	})
	ginkgo.It("one requirement, VerifyReq names it again", Req(reqA), func() {
		VerifyReq(reqA, "x").To(gomega.Equal("x"))
	})
	ginkgo.It("several requirements, VerifyReq fails one", Req(reqA, reqB), func() {
		VerifyReq(reqA, "x").To(gomega.Equal("x"))
		VerifyReq(reqB, "x").To(gomega.Equal("y"))
	})
	ginkgo.It("several requirements, Verify omits which", Req(reqA, reqB), func() {
		Verify("x").To(gomega.Equal("x"))
	})
	ginkgo.It("several requirements, VerifyReq names another", Req(reqA, reqB), func() {
		VerifyReq(reqC, "x").To(gomega.Equal("x"))
	})
})

// silentT is the testing.T RunSpecs reports to: the specs above fail on
// purpose, and the test judges them one by one.
type silentT struct{ failed bool }

func (s *silentT) Fail() { s.failed = true }

func TestCheckNamesItsRequirement(t *testing.T) {
	type outcome struct {
		state    types.SpecState
		message  string
		findings []string // the requirement of each finding
	}
	var mu sync.Mutex
	got := map[string]outcome{}
	ginkgo.ReportAfterEach(func(r types.SpecReport) {
		o := outcome{state: r.State, message: r.Failure.Message}
		for _, e := range r.ReportEntries {
			if e.Name == EntryFinding {
				v, _ := e.GetRawValue().(EntryValue)
				o.findings = append(o.findings, v.Req)
			}
		}
		mu.Lock()
		got[r.LeafNodeText] = o
		mu.Unlock()
	})
	suite, reporter := ginkgo.GinkgoConfiguration()
	suite.LabelFilter, suite.FocusStrings, suite.SkipStrings = "", nil, nil
	reporter.Succinct = true
	ginkgo.RunSpecs(&silentT{}, "engine checks", suite, reporter)

	for _, c := range []struct {
		spec     string
		pass     bool
		message  string // a failure's message contains it
		findings string // the requirements of the findings, comma-separated
	}{
		{"one requirement, Verify passes", true, "", ""},
		{"one requirement, Verify fails", false, reqA + ": Expected", reqA},
		{"one requirement, VerifyReq names it again", false, "suite bug: VerifyReq(\"" + reqA + "\", …) in a spec labelled with [" + reqA + "]", ""},
		{"several requirements, VerifyReq fails one", false, reqB + ": Expected", reqB},
		{"several requirements, Verify omits which", false, "suite bug: Verify in a spec labelled with 2 requirements", ""},
		{"several requirements, VerifyReq names another", false, "suite bug: a check of " + reqC + " in a spec not labelled with it", ""},
	} {
		o, ok := got[c.spec]
		switch {
		case !ok:
			t.Errorf("%s: did not run", c.spec)
		case c.pass && o.state != types.SpecStatePassed:
			t.Errorf("%s: %s (%s), want passed", c.spec, o.state, o.message)
		case !c.pass && o.state != types.SpecStateFailed:
			t.Errorf("%s: %s, want failed", c.spec, o.state)
		case !strings.Contains(o.message, c.message):
			t.Errorf("%s: failure %q, want it to say %q", c.spec, o.message, c.message)
		case strings.Join(o.findings, ",") != c.findings:
			t.Errorf("%s: findings under %q, want %q", c.spec, o.findings, c.findings)
		}
	}
}
