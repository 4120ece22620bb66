package conformance_test

import (
	"errors"
	"path/filepath"
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

// Every spec lives in the file of its primary (first-labelled)
// requirement's group: OIP-REST-PARAM-001 in suite/rest_param.go,
// OIP-GEN-005 in suite/gen.go, OIP-EXT-BIN-009 in suite/ext_bin.go.
func TestSpecsLiveInTheirGroupFile(t *testing.T) {
	rep := ginkgo.PreviewSpecs(conformance.SuiteDescription)
	for _, sr := range rep.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		var primary string
		for _, l := range sr.LeafNodeLabels {
			if id, ok := strings.CutPrefix(l, "req:"); ok {
				primary = id
				break
			}
		}
		group := primary[:strings.LastIndexByte(primary, '-')]
		want := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(group, "OIP-"), "-", "_")) + ".go"
		if got := filepath.Base(sr.LeafNodeLocation.FileName); got != want || filepath.Base(filepath.Dir(sr.LeafNodeLocation.FileName)) != "suite" {
			t.Errorf("%q checks %s first but is declared in %s, want suite/%s", sr.FullText(), primary, sr.LeafNodeLocation, want)
		}
	}
}

// make verify fails when a blocking requirement of the core or of a
// probed extension has neither a spec nor a waiver.
func TestCoverageFlagsUncoveredBlocking(t *testing.T) {
	w, err := conformance.Waivers()
	if err != nil {
		t.Fatal(err)
	}
	problems := (&conformance.Coverage{Specs: map[string][]string{}, Waivers: w}).Problems()
	for _, want := range []string{"OIP-REST-INFER-006 (MUST) has neither a spec nor a waiver in specs/waivers.yaml", "OIP-EXT-CFG-002 (MUST) has neither a spec nor a waiver in specs/waivers.yaml",
		"OIP-EXT-STAT-002 (MUST) has neither a spec nor a waiver in specs/waivers.yaml", "OIP-EXT-SHM-007 (MUST) has neither a spec nor a waiver in specs/waivers.yaml"} {
		if !slices.Contains(problems, want) {
			t.Errorf("problems lack %q", want)
		}
	}
	for _, p := range problems {
		if strings.HasPrefix(p, "OIP-EXT-SHM-011") { // CUDA shared memory has no probe: not gated
			t.Errorf("%q: an extension without a probe is not gated", p)
		}
	}
}
