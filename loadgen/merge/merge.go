package merge

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/oipkit/oipkit/loadgen"
)

// Merge combines results by merging their histograms and adding their
// counts — never by averaging percentiles. Callers check [Differences]
// (and, for segments, [CheckSegments]) first: the merged result keeps the
// first result's configuration and records in MergedDiffer what the
// others differed in.
//
// When every result is a segment of a split test (Config.Load.Segment),
// the merged result is the whole test's: its configuration without the
// segment, per-interval series aligned by wall-clock interval with their
// percentiles computed from the summed interval histograms, profile steps
// merged step by step, and Segments saying which segments were merged and
// which are missing or did not complete — a result missing any is
// incomplete (see [Judge]), never just smaller.
//
// Other results whose measured windows overlap in wall-clock time are
// treated as parallel generators (for example several agents against one
// server), so their rates add up; otherwise the runs are sequential and
// rates are totals over the summed durations. Their per-interval summaries
// are dropped (they cannot be merged meaningfully). The merged run is
// generator-bound if any input was.
func Merge(results ...*loadgen.Result) (*loadgen.Result, error) {
	if len(results) == 0 {
		return nil, errors.New("merge: no results")
	}
	segmented := true
	for _, r := range results {
		segmented = segmented && r.Config.Load.Segment != nil
	}
	if segmented {
		return mergeSegments(results), nil
	}
	return mergeRuns(results, ""), nil
}

// mergeRuns adds up results. label, if set, names each input in the
// generator-bound reasons ("segment 1/4: ").
func mergeRuns(results []*loadgen.Result, label string) *loadgen.Result {
	m := loadgen.NewResult(results[0].Config)
	m.Config = results[0].Config
	m.TestID = results[0].TestID
	m.Target = results[0].Target
	m.Start = results[0].Start
	m.EndReason = loadgen.EndCompleted
	var sumDur, sumElapsed time.Duration
	var winStart, winEnd, elEnd time.Time
	var requested float64 // requests the schedules asked for
	for i, r := range results {
		if r.Start.Before(m.Start) {
			m.Start = r.Start
		}
		if r.EndReason != loadgen.EndCompleted && m.EndReason == loadgen.EndCompleted {
			m.EndReason = r.EndReason
			m.Error = r.Error
		}
		m.Sources = append(m.Sources, r.Sources...)
		if i > 0 {
			for _, d := range loadgen.Differences(results[0], r) {
				name, _, _ := strings.Cut(d, " (")
				if !slices.Contains(m.MergedDiffer, name) {
					m.MergedDiffer = append(m.MergedDiffer, name)
				}
			}
		}
		for k, msgs := range r.ErrorSamples {
			if m.ErrorSamples == nil {
				m.ErrorSamples = map[string][]string{}
			}
			for _, msg := range msgs {
				m.ErrorSamples[k] = loadgen.AppendErrorSample(m.ErrorSamples[k], msg)
			}
		}
		if i == 0 || r.Start.Before(winStart) {
			winStart = r.Start
		}
		if e := r.Start.Add(r.Duration.D()); e.After(winEnd) {
			winEnd = e
		}
		if e := r.Start.Add(r.Elapsed.D()); e.After(elEnd) {
			elEnd = e
		}
		sumDur += r.Duration.D()
		sumElapsed += r.Elapsed.D()
		requested += r.Rates.Requested * r.Duration.D().Seconds()

		m.Counts.Add(r.Counts)
		for k, v := range r.Errors {
			m.Errors[k] += v
		}
		m.Counts.MergeDropped += m.Histograms.Add(r.Histograms)
		m.Warmup.Requests += r.Warmup.Requests
		m.Warmup.Duration += r.Warmup.Duration
		m.Checks.GOMAXPROCS = max(m.Checks.GOMAXPROCS, r.Checks.GOMAXPROCS)
		for _, w := range r.Warnings {
			if !slices.Contains(m.Warnings, w) {
				m.Warnings = append(m.Warnings, w)
			}
		}
		if r.Checks.GeneratorBound {
			for _, why := range r.Checks.Reasons {
				if label != "" {
					why = fmt.Sprintf(label, r.Config.Load.Segmented()) + why
				}
				m.Checks.Reasons = append(m.Checks.Reasons, why)
			}
		}
		m.Checks.CPUSeconds += r.Checks.CPUSeconds
		m.Checks.GCPauses = maxPause(m.Checks.GCPauses, r.Checks.GCPauses)
		m.Checks.SchedLatency = maxPause(m.Checks.SchedLatency, r.Checks.SchedLatency)
		m.Checks.HiccupP99 = max(m.Checks.HiccupP99, r.Checks.HiccupP99)
		m.Checks.HiccupMax = max(m.Checks.HiccupMax, r.Checks.HiccupMax)
	}
	if overlapping(results) {
		m.Duration = loadgen.Duration(winEnd.Sub(winStart))
		m.Elapsed = loadgen.Duration(elEnd.Sub(winStart))
	} else {
		m.Duration, m.Elapsed = loadgen.Duration(sumDur), loadgen.Duration(sumElapsed)
	}
	if s := m.Duration.D().Seconds(); s > 0 {
		m.Rates.Requested = requested / s
	}
	m.Checks.LagTolerance = results[0].Checks.LagTolerance
	m.Checks.RateTolerance = results[0].Checks.RateTolerance
	m.Recompute(sumElapsed)
	m.Checks.GeneratorBound = len(m.Checks.Reasons) > 0
	m.Checks.Reasons = slices.Compact(m.Checks.Reasons)
	return m
}

// overlapping reports whether any two results' windows overlap in time.
func overlapping(rs []*loadgen.Result) bool {
	for i, a := range rs {
		for _, b := range rs[i+1:] {
			if a.Start.Before(b.Start.Add(b.Duration.D())) && b.Start.Before(a.Start.Add(a.Duration.D())) {
				return true
			}
		}
	}
	return false
}

func maxPause(a, b loadgen.PauseStats) loadgen.PauseStats {
	return loadgen.PauseStats{Count: a.Count + b.Count, Total: a.Total + b.Total, P99: max(a.P99, b.P99), Max: max(a.Max, b.Max)}
}

// describeSegment names r's segment in messages: "1/4 (segment-1.json)".
func describeSegment(r *loadgen.Result) string {
	name := r.Config.Load.Segmented().String()
	if len(r.Sources) == 1 {
		name += " (" + r.Sources[0] + ")"
	}
	return name
}

// CheckSegments lists why results cannot be merged as the segments of one
// test run: results that are not segments beside segments, segments of
// different tests (different identities, with the settings that differ)
// or of different splits, the same segment twice, and segments of
// different runs (different shared starts, or measurements that did not
// overlap in time). Results that are all plain runs give none. A merge
// forced past these problems records them (MergedDiffer, Overlaps).
func CheckSegments(results []*loadgen.Result) []string {
	var segs, plain []*loadgen.Result
	for _, r := range results {
		if r.Config.Load.Segment != nil {
			segs = append(segs, r)
		} else {
			plain = append(plain, r)
		}
	}
	if len(segs) == 0 {
		return nil
	}
	var problems []string
	if len(plain) > 0 {
		problems = append(problems, fmt.Sprintf("%s is not a segment of a test, %s is: merge the segments of one test on their own",
			sourceName(plain[0]), describeSegment(segs[0])))
	}
	first := segs[0]
	for _, r := range segs[1:] {
		if r.TestID != first.TestID {
			what := strings.Join(loadgen.Differences(first, r), ", ")
			if what == "" {
				what = "settings that shape the load: duration, warm-up, interval, seed, request count, arrivals or headers"
			}
			problems = append(problems, fmt.Sprintf("segment %s belongs to test %s, segment %s to test %s: different tests (%s)",
				describeSegment(first), loadgen.ShortID(first.TestID), describeSegment(r), loadgen.ShortID(r.TestID), what))
		}
		if !r.Config.Load.StartAt.Equal(first.Config.Load.StartAt) {
			problems = append(problems, fmt.Sprintf("segment %s started at %s, segment %s at %s: different runs of the test",
				describeSegment(first), startName(first), describeSegment(r), startName(r)))
		}
	}
	problems = append(problems, overlapProblems(segs)...)
	// Without a shared start, segments of one run still overlap in time.
	var ran []*loadgen.Result
	for _, r := range segs {
		if r.EndReason != loadgen.EndError {
			ran = append(ran, r)
		}
	}
	for i, a := range ran {
		for _, b := range ran[i+1:] {
			if !a.Start.Before(b.Start.Add(b.Elapsed.D())) || !b.Start.Before(a.Start.Add(a.Elapsed.D())) {
				problems = append(problems, fmt.Sprintf("segment %s ran %s–%s, segment %s %s–%s: not at the same time, so not one run of the test",
					describeSegment(a), a.Start.Format(time.RFC3339), a.Start.Add(a.Elapsed.D()).Format(time.RFC3339),
					describeSegment(b), b.Start.Format(time.RFC3339), b.Start.Add(b.Elapsed.D()).Format(time.RFC3339)))
			}
		}
	}
	return problems
}

func startName(r *loadgen.Result) string {
	if r.Config.Load.StartAt.IsZero() {
		return "no shared start"
	}
	return r.Config.Load.StartAt.Format(time.RFC3339Nano)
}

func sourceName(r *loadgen.Result) string {
	if len(r.Sources) == 1 {
		return r.Sources[0]
	}
	return "a result"
}

// overlapProblems names segments that claim the same requests: segment I
// of N and J of M share requests exactly when I ≡ J mod gcd(N, M).
func overlapProblems(segs []*loadgen.Result) []string {
	var out []string
	for i, a := range segs {
		for _, b := range segs[i+1:] {
			sa, sb := a.Config.Load.Segmented(), b.Config.Load.Segmented()
			switch {
			case sa == sb:
				out = append(out, fmt.Sprintf("segment %s is given twice: %s and %s", sa, sourceName(a), sourceName(b)))
			case sa.Count != sb.Count && sa.Index%gcd(sa.Count, sb.Count) == sb.Index%gcd(sa.Count, sb.Count):
				out = append(out, fmt.Sprintf("segment %s and segment %s overlap: the test was split in %d and in %d",
					describeSegment(a), describeSegment(b), sa.Count, sb.Count))
			case sa.Count != sb.Count:
				out = append(out, fmt.Sprintf("segments %s and %s come from splits in %d and in %d: one test is split one way",
					describeSegment(a), describeSegment(b), sa.Count, sb.Count))
			}
		}
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// mergeSegments merges the segments of a split test into the whole test's
// result.
func mergeSegments(results []*loadgen.Result) *loadgen.Result {
	first := results[0]
	set := &loadgen.SegmentSet{TestID: first.TestID, Count: first.Config.Load.Segment.Count, StartAt: first.Config.Load.StartAt}
	seen := map[int]int{}
	var ran []*loadgen.Result // results with measurements
	for _, r := range results {
		seg := r.Config.Load.Segmented()
		if seg.Count != set.Count {
			set.Count = max(set.Count, seg.Count)
		}
		seen[seg.Index]++
		switch r.EndReason {
		case loadgen.EndCompleted:
			if seen[seg.Index] == 1 {
				set.Merged = append(set.Merged, seg.Index)
			}
		default:
			why := string(r.EndReason)
			if r.Error != "" {
				why += ": " + r.Error
			}
			set.Failed = append(set.Failed, loadgen.SegmentFailure{Index: seg.Index, Reason: why})
		}
		if r.EndReason != loadgen.EndError {
			ran = append(ran, r)
		}
		if r.Clock != nil && r.Clock.Error == "" {
			set.Clocks = append(set.Clocks, loadgen.SegmentClock{Index: seg.Index, ClockOffset: *r.Clock})
		}
	}
	set.Overlaps = overlapProblems(results)
	for i := range set.Count {
		if seen[i] == 0 {
			set.Missing = append(set.Missing, i)
		}
	}
	slices.Sort(set.Merged)
	sort.SliceStable(set.Failed, func(i, j int) bool { return set.Failed[i].Index < set.Failed[j].Index })
	sort.SliceStable(set.Clocks, func(i, j int) bool { return set.Clocks[i].Index < set.Clocks[j].Index })

	var m *loadgen.Result
	if len(ran) == 0 {
		// No segment measured anything: the test did not run.
		m = mergeRuns(results, "segment %s: ")
		m.Duration, m.Elapsed, m.Rates = 0, 0, loadgen.Rates{}
		m.EndReason, m.Error = loadgen.EndError, "no segment of the test ran: "+strings.Join(set.Incomplete(), "; ")
	} else {
		m = mergeRuns(ran, "segment %s: ")
		m.EndReason, m.Error = loadgen.EndCompleted, ""
		for _, r := range results {
			if r.EndReason == loadgen.EndError {
				m.Sources = append(m.Sources, r.Sources...)
			}
		}
	}
	m.Config.Load.Segment = nil
	m.Segments = set
	m.Warmup.Duration = 0
	for _, r := range ran {
		m.Warmup.Duration = max(m.Warmup.Duration, r.Warmup.Duration)
	}

	if len(ran) > 0 {
		lo, hi := ran[0].Start, ran[0].Start
		for _, r := range ran {
			lo, hi = minTime(lo, r.Start), maxTime(hi, r.Start)
		}
		set.StartSpread = loadgen.Duration(hi.Sub(lo))
		m.Start = lo
		iv := m.Config.Load.Interval.D()
		var snapped bool
		m.Intervals, snapped = mergeIntervals(ran, lo, iv)
		if snapped {
			m.Warnings = append(m.Warnings, fmt.Sprintf("the segments' measurements started up to %s apart (no shared Load.StartAt): their intervals were aligned to the nearest whole interval",
				set.StartSpread.D().Round(time.Millisecond)))
		}
		m.Steps = mergeProfileSteps(ran)
	}
	if len(set.Clocks) >= 2 {
		lo, hi := set.Clocks[0], set.Clocks[0]
		for _, c := range set.Clocks {
			if c.Offset < lo.Offset {
				lo = c
			}
			if c.Offset > hi.Offset {
				hi = c
			}
		}
		spread, prec := hi.Offset-lo.Offset, hi.Precision+lo.Precision
		set.ClockSpread, set.ClockPrecision = &spread, &prec
		if spread-prec > loadgen.Duration(clockSpreadWarning) {
			m.Warnings = append(m.Warnings, fmt.Sprintf("the segments' clocks disagree by %s ± %s against the target's (segments %d and %d): their schedules were that far from one schedule; keep the generators' clocks in step (NTP)",
				spread.D().Round(time.Microsecond), prec.D().Round(time.Microsecond), lo.Index, hi.Index))
		}
	}
	return m
}

// clockSpreadWarning is how far the segments' clocks may disagree before
// the merged result warns: a hundredth of the default interval.
const clockSpreadWarning = 10 * time.Millisecond

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// mergeIntervals aligns the segments' interval series by wall-clock
// interval and adds them up: a segment whose measurement started at S has
// its intervals placed at S − origin, rounded to a whole interval (exact
// with a shared start, where every segment starts at the same S). Counts
// and rates add; percentiles come from the sum of the interval histograms.
// It reports whether any segment had to be moved to the nearest interval.
func mergeIntervals(rs []*loadgen.Result, origin time.Time, iv time.Duration) ([]loadgen.IntervalStats, bool) {
	type acc struct {
		st    loadgen.IntervalStats
		h     loadgen.Histograms
		exact bool
	}
	byKey := map[int64]*acc{}
	snapped := false
	for _, r := range rs {
		shift := r.Start.Sub(origin)
		if iv > 0 {
			whole := time.Duration(math.Round(float64(shift)/float64(iv))) * iv
			snapped = snapped || whole != shift
			shift = whole
		}
		for _, x := range r.Intervals {
			key := int64(math.Round((shift.Seconds() + x.Start) * 1e6)) // µs
			a := byKey[key]
			if a == nil {
				a = &acc{exact: true, h: loadgen.Histograms{Response: loadgen.NewHistogram(), Service: loadgen.NewHistogram(), SendLag: loadgen.NewHistogram(), Failed: loadgen.NewHistogram()}}
				a.st = loadgen.IntervalStats{Start: float64(key) / 1e6, Step: x.Step}
				byKey[key] = a
			}
			s := &a.st
			s.Length = max(s.Length, x.Length)
			s.RequestedRate += x.RequestedRate
			s.Sent += x.Sent
			s.Dropped += x.Dropped
			s.Completed += x.Completed
			s.OK += x.OK
			s.Errors += x.Errors
			s.Timeouts += x.Timeouts
			s.InFlight += x.InFlight
			s.Responses += x.Responses
			if x.Histograms != nil {
				a.h.Add(*x.Histograms)
			} else {
				// No histograms (a result of an older oipkit): the largest
				// percentile is a bound, not the merged value.
				a.exact = false
				s.ResponseP50, s.ResponseP90, s.ResponseP99 = max(s.ResponseP50, x.ResponseP50), max(s.ResponseP90, x.ResponseP90), max(s.ResponseP99, x.ResponseP99)
				s.ServiceP50, s.ServiceP99, s.SendLagP99 = max(s.ServiceP50, x.ServiceP50), max(s.ServiceP99, x.ServiceP99), max(s.SendLagP99, x.SendLagP99)
			}
			s.ResponseMax = max(s.ResponseMax, x.ResponseMax)
		}
	}
	keys := make([]int64, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]loadgen.IntervalStats, 0, len(keys))
	for _, k := range keys {
		a := byKey[k]
		s := a.st
		if a.exact {
			h := a.h
			q := func(h *loadgen.Histogram, p float64) int64 { return int64(h.Quantile(p)) }
			s.ResponseP50, s.ResponseP90, s.ResponseP99 = q(h.Response, 50), q(h.Response, 90), q(h.Response, 99)
			s.ResponseMax = int64(h.Response.Max())
			s.ServiceP50, s.ServiceP99, s.SendLagP99 = q(h.Service, 50), q(h.Service, 99), q(h.SendLag, 99)
			if h.FirstResponse != nil {
				s.FirstResponseP50, s.FirstResponseP99 = q(h.FirstResponse, 50), q(h.FirstResponse, 99)
			}
			if h.InterResponse != nil {
				s.InterResponseP50, s.InterResponseP99 = q(h.InterResponse, 50), q(h.InterResponse, 99)
			}
		}
		if s.Length > 0 {
			s.Rate = float64(s.Completed) / s.Length
		}
		out = append(out, s)
	}
	return out, snapped
}

// mergeProfileSteps adds up the steps of a step or linear rate profile,
// which are the same in every segment (the same profile over the same
// window); it merges nothing when they differ.
func mergeProfileSteps(rs []*loadgen.Result) []loadgen.Step {
	n := len(rs[0].Steps)
	for _, r := range rs {
		if len(r.Steps) != n {
			return nil
		}
		for i, s := range r.Steps {
			if s.Kind != loadgen.StepProfile || s.Start != rs[0].Steps[i].Start {
				return nil
			}
		}
	}
	out := make([]loadgen.Step, n)
	for i := range out {
		st := loadgen.Step{Kind: loadgen.StepProfile, Start: rs[0].Steps[i].Start, Errors: map[string]int64{},
			Histograms: loadgen.Histograms{Response: loadgen.NewHistogram(), Service: loadgen.NewHistogram(), SendLag: loadgen.NewHistogram(), Failed: loadgen.NewHistogram()}}
		for _, r := range rs {
			s := r.Steps[i]
			st.Rate += s.Rate
			st.Duration = max(st.Duration, s.Duration)
			st.Elapsed = max(st.Elapsed, s.Elapsed)
			st.Counts.Add(s.Counts)
			st.Counts.MergeDropped += st.Histograms.Add(s.Histograms)
			st.Rates.Requested += s.Rates.Requested
			for k, v := range s.Errors {
				st.Errors[k] += v
			}
			for k, msgs := range s.ErrorSamples {
				if st.ErrorSamples == nil {
					st.ErrorSamples = map[string][]string{}
				}
				for _, msg := range msgs {
					st.ErrorSamples[k] = loadgen.AppendErrorSample(st.ErrorSamples[k], msg)
				}
			}
			if s.GeneratorBound {
				st.GeneratorBound = true
				st.Reasons = append(st.Reasons, s.Reasons...)
			}
		}
		if d := st.Duration.D().Seconds(); d > 0 {
			st.Rates.Offered = float64(st.Counts.Sent) / d
		}
		if e := st.Elapsed.D().Seconds(); e > 0 {
			st.Rates.Completed = float64(st.Counts.Completed) / e
		}
		st.Latency = loadgen.SummarizeAll(st.Histograms)
		out[i] = st
	}
	return out
}
