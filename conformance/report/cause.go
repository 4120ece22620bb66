package report

import (
	"fmt"
	"slices"
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
		q.Reason = answerReason(by)
	}
	blockShared(rs, before, causes)
}

func answerReason(by []string) string {
	return fmt.Sprintf("blocked by %s: every failing check of it failed on an answer that fails %s already (not graded)",
		strings.Join(by, ", "), plural(len(by), "that requirement", "those requirements"))
}

// blockShared is Block's second rule: a failed requirement each of whose
// failing exchanges also fails another failed requirement is one defect
// counted twice (two catalog entries about one rule — a request id echoed
// in INFER and in RESP — or two rules a single wrong answer breaks at
// once), so it is blocked by those. An exchange whose answer the first rule
// gave a cause belongs to that cause only. Of requirements failing on the
// same exchanges, the one that comes first by rank stays failed: the
// catalog puts the core's rules (server metadata, the response) before the
// extensions' rules that restate them for one feature. Then, until
// nothing changes, a failed requirement whose exchanges all fail other
// failed requirements is blocked too, so that no failed requirement is
// wholly explained by others, and every blocked one names failed ones.
func blockShared(rs []RequirementResult, before func(a, b string) bool, causes map[string]string) {
	exchanges := map[string][]string{} // requirement → its failing exchanges
	var failed []string
	index := map[string]int{}
	for i, q := range rs {
		index[q.ID] = i
		if q.Status != StatusFailed {
			continue
		}
		keys, ok := failingExchanges(q, causes)
		if !ok {
			continue // a failure without evidence is never explained
		}
		exchanges[q.ID] = keys
		failed = append(failed, q.ID)
	}
	slices.SortStableFunc(failed, func(a, b string) int {
		if before(a, b) {
			return -1
		}
		if before(b, a) {
			return 1
		}
		return 0
	})
	kept := map[string]bool{}
	// coverers names, for each exchange of id, a kept requirement failing
	// on it (the first in the order of failed); nil when one has none.
	coverers := func(id string) []string {
		var by []string
		for _, k := range exchanges[id] {
			c := ""
			for _, o := range failed {
				if o != id && kept[o] && slices.Contains(exchanges[o], k) {
					c = o
					break
				}
			}
			if c == "" {
				return nil
			}
			if !slices.Contains(by, c) {
				by = append(by, c)
			}
		}
		return by
	}
	for _, id := range failed {
		kept[id] = coverers(id) == nil
	}
	for changed := true; changed; {
		changed = false
		for i := len(failed) - 1; i >= 0; i-- {
			if id := failed[i]; kept[id] && coverers(id) != nil {
				kept[id], changed = false, true
			}
		}
	}
	for _, id := range failed {
		if kept[id] {
			continue
		}
		by := coverers(id)
		q := &rs[index[id]]
		q.Status, q.BlockedBy = StatusBlocked, by
		q.Reason = fmt.Sprintf("blocked by %s: every failing check of it failed on an exchange that fails %s as well: one defect, graded once",
			strings.Join(by, ", "), plural(len(by), "that requirement", "those requirements"))
	}
	// A requirement blocked by the first rule may name one the second rule
	// blocked: name what blocks that instead.
	for i := range rs {
		q := &rs[i]
		if q.Status != StatusBlocked {
			continue
		}
		var by []string
		for _, b := range q.BlockedBy {
			if j, ok := index[b]; ok && rs[j].Status == StatusBlocked && !kept[b] && exchanges[b] != nil {
				for _, bb := range rs[j].BlockedBy {
					if !slices.Contains(by, bb) {
						by = append(by, bb)
					}
				}
				continue
			}
			if !slices.Contains(by, b) {
				by = append(by, b)
			}
		}
		if !slices.Equal(by, q.BlockedBy) {
			q.BlockedBy, q.Reason = by, answerReason(by)
		}
	}
}

// failingExchanges lists the exchanges of q's fail findings (their
// [defectKey]s) but those whose answer another requirement failed as a whole
// (causes: the first rule's); false when one of them has no evidence.
func failingExchanges(q RequirementResult, causes map[string]string) ([]string, bool) {
	var keys []string
	for _, f := range q.Findings {
		if f.Class != ClassFail {
			continue
		}
		if f.Evidence == nil {
			return nil, false
		}
		k := defectKey(q, f)
		if c, ok := causes[k]; ok && c != q.ID {
			continue
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, len(keys) > 0
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
