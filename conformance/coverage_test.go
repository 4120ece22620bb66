package conformance_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/oipkit/oipkit/conformance"
)

// TestSpecTree checks the spec tree without running it: every spec has one
// transport, at least one known requirement, a unique text; and coverage
// has no problems (the same gate as make verify, minus the staleness check).
func TestSpecTree(t *testing.T) {
	cov, err := conformance.PreviewCoverage()
	if errors.Is(err, conformance.ErrAlreadyRun) {
		t.Skip("the suite already ran in this process")
	}
	if err != nil {
		t.Fatal(err)
	}
	if p := cov.Problems(); len(p) > 0 {
		t.Errorf("coverage problems:\n%s", strings.Join(p, "\n"))
	}
	rep := ginkgo.PreviewSpecs(conformance.SuiteDescription)
	seen := map[string]bool{}
	for _, sr := range rep.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		text := sr.FullText()
		if seen[text] {
			t.Errorf("duplicate spec text %q", text)
		}
		seen[text] = true
		var transports, reqs int
		for _, l := range sr.Labels() {
			switch {
			case strings.HasPrefix(l, "transport:"):
				transports++
			case strings.HasPrefix(l, "req:"):
				reqs++
			}
		}
		if transports != 1 || reqs == 0 {
			t.Errorf("%q: %d transport labels and %d requirement labels, want 1 and at least 1 (labels %v)", text, transports, reqs, sr.Labels())
		}
		if text != strings.TrimSpace(text) || slices.Contains(strings.Fields(text), "[") {
			t.Errorf("%q: spec text must not carry hand-written tags or stray spaces", text)
		}
	}
	if cov.SpecCount != len(seen) {
		t.Errorf("coverage counted %d specs, preview %d", cov.SpecCount, len(seen))
	}
}
