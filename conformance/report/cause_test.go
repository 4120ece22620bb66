package report

import (
	"slices"
	"strings"
	"testing"
)

// exchange is a failed answer: the same request and response make the
// same exchange, whichever spec sent it.
func exchange(body string, status string) *Evidence {
	return &Evidence{
		Request:  Message{Method: "POST", Target: "/v2/models/add_sub/infer", Body: body, BodyBytes: len(body)},
		Response: Message{Status: status, Body: `{"error":"boom"}`, Header: map[string][]string{"Date": {status}}},
	}
}

func TestBlock(t *testing.T) {
	idless := func() *Evidence { return exchange(`{"inputs":[]}`, "HTTP 500") }
	fail := func(ev *Evidence, scope string) Finding {
		return Finding{Class: ClassFail, Message: "got 500, want 200", Evidence: ev, Scope: scope}
	}
	rs := []RequirementResult{
		// The cause by rank: its answer fails.
		{ID: "A-ANSWER", Status: StatusFailed, Findings: []Finding{fail(idless(), ScopeAnswer)}},
		// The same failed answer (another Date) under a content rule:
		// blocked by the cause.
		{ID: "B-ORDER", Status: StatusFailed, Findings: []Finding{fail(idless(), ScopeAnswer)}},
		// A content finding on that exchange: blocked too.
		{ID: "C-NAME", Status: StatusFailed, Findings: []Finding{fail(idless(), "")}},
		// One finding explained, one on another exchange: still failed.
		{ID: "D-SHAPE", Status: StatusFailed, Findings: []Finding{fail(idless(), ""), fail(exchange(`{"id":"1"}`, "HTTP 200"), "")}},
		// Without evidence nothing is explained.
		{ID: "E-BARE", Status: StatusFailed, Findings: []Finding{{Class: ClassFail, Message: "spec failed"}}},
		// Warnings on the exchange do not block; only fail findings count.
		{ID: "F-WARN", Status: StatusWarning, Findings: []Finding{{Class: ClassWarning, Evidence: idless(), Scope: ScopeAnswer}}},
		// A content finding of a 2xx answer that another failed rule
		// (D-SHAPE) fails as well: one wrong answer, one defect, graded
		// under the rule first by rank.
		{ID: "G-VALUES", Status: StatusFailed, Findings: []Finding{fail(exchange(`{"id":"1"}`, "HTTP 200"), "")}},
	}
	rank := map[string]int{"A-ANSWER": 0}
	Block(rs, func(id string) int {
		if r, ok := rank[id]; ok {
			return r
		}
		return 10
	})
	want := map[string]Status{"A-ANSWER": StatusFailed, "B-ORDER": StatusBlocked, "C-NAME": StatusBlocked,
		"D-SHAPE": StatusFailed, "E-BARE": StatusFailed, "F-WARN": StatusWarning, "G-VALUES": StatusBlocked}
	wantBy := map[string]string{"B-ORDER": "A-ANSWER", "C-NAME": "A-ANSWER", "G-VALUES": "D-SHAPE"}
	for _, q := range rs {
		if q.Status != want[q.ID] {
			t.Errorf("%s: %s, want %s", q.ID, q.Status, want[q.ID])
		}
		if by := wantBy[q.ID]; q.Status == StatusBlocked && (!slices.Equal(q.BlockedBy, []string{by}) || !strings.Contains(q.Reason, by)) {
			t.Errorf("%s: blocked by %v (%q), want %s", q.ID, q.BlockedBy, q.Reason, by)
		}
	}

	r := &ConformanceReport{APIVersion: APIVersion, Kind: Kind, Implementation: Implementation{Name: "x"}, Requirements: rs}
	r.Counts = Count(rs)
	if err := r.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if n := r.DistinctDefects(); n != 3 {
		t.Errorf("DistinctDefects = %d, want 3 (A, D, E)", n)
	}
	// The findings file's defect of the failed answer names what it blocks.
	for _, d := range Defects(r) {
		if d.IDs[0] == "A-ANSWER" && !slices.Equal(d.Blocked, []string{"B-ORDER", "C-NAME"}) {
			t.Errorf("defect of A-ANSWER blocks %v, want [B-ORDER C-NAME]", d.Blocked)
		}
	}
	// A blocked requirement must name a failed one.
	r.Requirements[1].BlockedBy = []string{"G-MISSING"}
	if err := r.Validate(); err == nil {
		t.Error("Validate accepted a requirement blocked by one that did not fail")
	}
}

// Without a rank the first requirement on the exchange is the cause, and
// a tie never blocks both.
func TestBlockTie(t *testing.T) {
	ev := func() *Evidence { return exchange(`{}`, "HTTP 500") }
	rs := []RequirementResult{
		{ID: "Z", Status: StatusFailed, Findings: []Finding{{Class: ClassFail, Evidence: ev(), Scope: ScopeAnswer}}},
		{ID: "A", Status: StatusFailed, Findings: []Finding{{Class: ClassFail, Evidence: ev(), Scope: ScopeAnswer}}},
	}
	Block(rs, nil)
	if rs[0].Status != StatusFailed || rs[1].Status != StatusBlocked || !slices.Equal(rs[1].BlockedBy, []string{"Z"}) {
		t.Errorf("got %s, %s by %v; want Z failed, A blocked by Z", rs[0].Status, rs[1].Status, rs[1].BlockedBy)
	}
}
