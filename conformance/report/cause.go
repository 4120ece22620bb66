package report

import (
	"fmt"
	"strings"
)

// One defect, one failure: a request answered 500 fails the rule about
// that answer, and every other rule checked on the same exchange (output
// values, shapes, names) fails with it only because there was nothing to
// look at. Block finds those cascades so that a report fails the cause
// once and lists the rest as blocked by it.

// Block marks as blocked every failed requirement whose fail findings are
// all explained by another failed requirement, and says by which
// (BlockedBy, Reason). A fail finding on an exchange (the same request and
// answer, [defectKey]) is explained when another requirement has a fail
// finding about that exchange's answer as a whole ([ScopeAnswer]) and is
// its cause: of the requirements with such a finding on the exchange, the
// one that comes first by rank (lower first; ties by ID). The cause of an
// exchange keeps its failure, so a blocked requirement always names a
// failed one. Findings without evidence are never explained. rank orders
// the requirements a cause is chosen from; nil ranks them in the order
// given.
func Block(rs []RequirementResult, rank func(id string) int) {
	if rank == nil {
		order := make(map[string]int, len(rs))
		for i, q := range rs {
			order[q.ID] = i
		}
		rank = func(id string) int { return order[id] }
	}
	before := func(a, b string) bool {
		ra, rb := rank(a), rank(b)
		return ra < rb || ra == rb && a < b
	}
	causes := map[string]string{} // exchange → the requirement its answer fails first
	for _, q := range rs {
		if q.Status != StatusFailed {
			continue
		}
		for _, f := range q.Findings {
			if f.Class != ClassFail || f.Scope != ScopeAnswer || f.Evidence == nil {
				continue
			}
			k := defectKey(q, f)
			if c, ok := causes[k]; !ok || before(q.ID, c) {
				causes[k] = q.ID
			}
		}
	}
	for i := range rs {
		q := &rs[i]
		if q.Status != StatusFailed {
			continue
		}
		var by []string
		explained, fails := true, 0
		for _, f := range q.Findings {
			if f.Class != ClassFail {
				continue
			}
			fails++
			c, ok := causes[defectKey(*q, f)]
			if !ok || c == q.ID {
				explained = false
				break
			}
			if !contains(by, c) {
				by = append(by, c)
			}
		}
		if fails == 0 || !explained {
			continue
		}
		q.Status, q.BlockedBy = StatusBlocked, by
		q.Reason = fmt.Sprintf("blocked by %s: every failing check of it failed on an answer that fails %s already (not graded)",
			strings.Join(by, ", "), plural(len(by), "that requirement", "those requirements"))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// DistinctDefects is the number of distinct defects a report found: its
// failed requirements once cascades are blocked ([Block]), each a rule the
// server breaks on an exchange no other failed rule explains.
func (r *ConformanceReport) DistinctDefects() int {
	return len(r.WithStatus(StatusFailed))
}
