package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Two catalog entries about one rule (the id echo, in INFER and in RESP)
// failing on one answer are one defect: the first by rank stays failed.
func TestBlockSharedExchange(t *testing.T) {
	ev := exchange(`{"id":"a\u0000b"}`, "HTTP 200")
	fail := Finding{Class: ClassFail, Message: `id is "a", want "a\x00b"`, Evidence: ev}
	rs := []RequirementResult{
		{ID: "INFER-006", Status: StatusFailed, Findings: []Finding{fail}},
		{ID: "RESP-004", Status: StatusFailed, Findings: []Finding{fail}},
	}
	Block(rs, nil)
	if rs[0].Status != StatusFailed || rs[1].Status != StatusBlocked || !slices.Equal(rs[1].BlockedBy, []string{"INFER-006"}) {
		t.Fatalf("got %s, %s by %v; want INFER-006 failed, RESP-004 blocked by it", rs[0].Status, rs[1].Status, rs[1].BlockedBy)
	}
}

// Whatever the overlap of failing exchanges, after Block no failed
// requirement fails only on exchanges other failed requirements fail on,
// every blocked requirement names failed ones covering each of its
// exchanges, and every exchange that failed still fails some requirement.
func TestBlockSharedLeavesNoCascade(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		n, ex := 2+rng.IntN(6), 1+rng.IntN(6)
		var rs []RequirementResult
		for i := range n {
			q := RequirementResult{ID: fmt.Sprintf("R%d", i), Status: StatusFailed}
			for k := range ex {
				if rng.IntN(3) == 0 {
					q.Findings = append(q.Findings, Finding{Class: ClassFail, Evidence: exchange(fmt.Sprint(k), "HTTP 200")})
				}
			}
			if q.Findings == nil {
				q.Status = StatusPassed
			}
			rs = append(rs, q)
		}
		before := map[string]bool{}
		for _, q := range rs {
			for _, f := range q.Findings {
				before[defectKey(q, f)] = true
			}
		}
		Block(rs, nil)
		failing := map[string][]string{} // exchange → failed requirements
		for _, q := range rs {
			if q.Status == StatusFailed {
				for _, f := range q.Findings {
					failing[defectKey(q, f)] = append(failing[defectKey(q, f)], q.ID)
				}
			}
		}
		if len(failing) != len(before) {
			t.Fatalf("trial %d: %d exchanges fail after Block, %d before", trial, len(failing), len(before))
		}
		for _, q := range rs {
			switch q.Status {
			case StatusFailed:
				alone := false
				for _, f := range q.Findings {
					if len(failing[defectKey(q, f)]) == 1 {
						alone = true
					}
				}
				if !alone {
					t.Fatalf("trial %d: %s failed but every exchange of it fails another", trial, q.ID)
				}
			case StatusBlocked:
				for _, f := range q.Findings {
					covered := false
					for _, b := range q.BlockedBy {
						covered = covered || slices.Contains(failing[defectKey(q, f)], b)
					}
					if !covered {
						t.Fatalf("trial %d: %s blocked by %v, none fails its exchange", trial, q.ID, q.BlockedBy)
					}
				}
			}
		}
	}
}
