package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// A RateProfile is the intended arrival rate of an open-loop run over time:
// piecewise linear in requests per second, holding its last rate for ever.
// It covers a constant rate, step ramps and linear ramps. The zero value has
// no segments and is invalid.
type RateProfile struct {
	segs []segment
	spec string
}

// segment is one piece of a profile: the rate moves linearly from `from` to
// `to` over `length` seconds starting at `start`. before is the expected
// number of arrivals up to start (the integral of the rate).
type segment struct {
	start, length float64 // seconds; the last segment is infinitely long
	from, to      float64 // requests per second
	before        float64
}

// ConstantRate returns a profile of r requests per second.
func ConstantRate(r float64) (RateProfile, error) {
	if !(r > 0) || math.IsInf(r, 0) {
		return RateProfile{}, fmt.Errorf("rate %v: want a positive number of requests per second", r)
	}
	return newProfile(fmt.Sprint(r), []segment{{from: r, to: r}}), nil
}

// StepRate returns a profile that starts at from requests per second and
// changes by step every stepDuration until it reaches to, which it then holds.
// A step with the wrong sign for from→to is an error.
func StepRate(from, to, step float64, stepDuration time.Duration) (RateProfile, error) {
	spec := fmt.Sprintf("step:%v:%v:%v:%v", from, to, step, stepDuration)
	switch {
	case !(from > 0) || !(to > 0) || math.IsInf(from, 0) || math.IsInf(to, 0):
		return RateProfile{}, fmt.Errorf("%s: rates must be positive", spec)
	case stepDuration <= 0:
		return RateProfile{}, fmt.Errorf("%s: step duration must be positive", spec)
	case step == 0 || math.IsNaN(step) || (to-from)*step < 0:
		return RateProfile{}, fmt.Errorf("%s: step must be non-zero and lead from %v to %v", spec, from, to)
	}
	n := int(math.Floor((to-from)/step)) + 1 // levels from, from+step, ... not past to
	if n > 100000 {
		return RateProfile{}, fmt.Errorf("%s: more than 100000 steps", spec)
	}
	var segs []segment
	for i := range n {
		r := from + float64(i)*step
		segs = append(segs, segment{length: stepDuration.Seconds(), from: r, to: r})
	}
	if last := segs[len(segs)-1].to; last != to {
		segs = append(segs, segment{length: stepDuration.Seconds(), from: to, to: to})
	}
	return newProfile(spec, segs), nil
}

// LinearRate returns a profile that moves linearly from `from` to `to`
// requests per second over `over`, then holds `to`.
func LinearRate(from, to float64, over time.Duration) (RateProfile, error) {
	spec := fmt.Sprintf("linear:%v:%v:%v", from, to, over)
	switch {
	case from < 0 || !(to > 0) || math.IsInf(from, 0) || math.IsInf(to, 0) || math.IsNaN(from):
		return RateProfile{}, fmt.Errorf("%s: the start rate must be >= 0 and the end rate positive", spec)
	case over <= 0:
		return RateProfile{}, fmt.Errorf("%s: ramp duration must be positive", spec)
	}
	return newProfile(spec, []segment{
		{length: over.Seconds(), from: from, to: to},
		{length: math.Inf(1), from: to, to: to},
	}), nil
}

// ParseRate parses a rate flag: a number of requests per second ("1000"),
// a step ramp "step:FROM:TO:STEP:STEP_DURATION" ("step:100:1000:100:5s") or
// a linear ramp "linear:FROM:TO:DURATION" ("linear:100:1000:30s").
func ParseRate(s string) (RateProfile, error) {
	p, err := parseRate(s)
	if err != nil {
		return RateProfile{}, err
	}
	p.spec = s // written back as given
	return p, nil
}

// IsZero reports whether p is the zero profile (no rate given).
func (p RateProfile) IsZero() bool { return len(p.segs) == 0 }

// MarshalText writes the profile as it was given to ParseRate.
func (p RateProfile) MarshalText() ([]byte, error) { return []byte(p.spec), nil }

// UnmarshalText parses a profile.
func (p *RateProfile) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

func parseRate(s string) (RateProfile, error) {
	parts := strings.Split(s, ":")
	nums := func(ss []string) ([]float64, error) {
		out := make([]float64, len(ss))
		for i, p := range ss {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return nil, fmt.Errorf("rate %q: %q is not a number", s, p)
			}
			out[i] = v
		}
		return out, nil
	}
	switch parts[0] {
	case "step":
		if len(parts) != 5 {
			return RateProfile{}, fmt.Errorf("rate %q: want step:FROM:TO:STEP:STEP_DURATION", s)
		}
		v, err := nums(parts[1:4])
		if err != nil {
			return RateProfile{}, err
		}
		d, err := time.ParseDuration(parts[4])
		if err != nil {
			return RateProfile{}, fmt.Errorf("rate %q: %w", s, err)
		}
		return StepRate(v[0], v[1], v[2], d)
	case "linear":
		if len(parts) != 4 {
			return RateProfile{}, fmt.Errorf("rate %q: want linear:FROM:TO:DURATION", s)
		}
		v, err := nums(parts[1:3])
		if err != nil {
			return RateProfile{}, err
		}
		d, err := time.ParseDuration(parts[3])
		if err != nil {
			return RateProfile{}, fmt.Errorf("rate %q: %w", s, err)
		}
		return LinearRate(v[0], v[1], d)
	}
	if len(parts) != 1 {
		return RateProfile{}, fmt.Errorf("rate %q: want a number, step:... or linear:...", s)
	}
	v, err := nums(parts)
	if err != nil {
		return RateProfile{}, err
	}
	return ConstantRate(v[0])
}

func newProfile(spec string, segs []segment) RateProfile {
	segs[len(segs)-1].length = math.Inf(1) // the last rate holds for ever
	start, before := 0.0, 0.0
	for i := range segs {
		segs[i].start, segs[i].before = start, before
		start += segs[i].length
		before += segs[i].count(segs[i].length)
	}
	return RateProfile{segs: segs, spec: spec}
}

// String returns the profile in the syntax ParseRate accepts.
func (p RateProfile) String() string { return p.spec }

// Valid reports whether p was built by one of the constructors.
func (p RateProfile) Valid() bool { return len(p.segs) > 0 }

// Rate returns the intended rate in requests per second at offset t.
func (p RateProfile) Rate(t time.Duration) float64 {
	s := t.Seconds()
	g := p.segs[p.segmentAt(s)]
	u := s - g.start
	if math.IsInf(g.length, 1) {
		return g.to
	}
	return g.from + (g.to-g.from)*u/g.length
}

// Expected returns the expected number of arrivals in [0, t): the integral
// of the rate.
func (p RateProfile) Expected(t time.Duration) float64 {
	s := t.Seconds()
	g := p.segs[p.segmentAt(s)]
	return g.before + g.count(s-g.start)
}

func (p RateProfile) segmentAt(s float64) int {
	i := 0
	for i+1 < len(p.segs) && s >= p.segs[i+1].start {
		i++
	}
	return i
}

// count is the expected number of arrivals in the first u seconds of g.
func (g segment) count(u float64) float64 {
	if math.IsInf(g.length, 1) || g.from == g.to {
		return g.from * u
	}
	return g.from*u + (g.to-g.from)*u*u/(2*g.length)
}

// offset inverts count: the u at which count(u) = m, or +Inf if the rate is
// zero for good. It solves a·u² + b·u = m in the cancellation-free form.
func (g segment) offset(m float64) float64 {
	if m <= 0 {
		return 0
	}
	b := g.from
	a := 0.0
	if !math.IsInf(g.length, 1) {
		a = (g.to - g.from) / (2 * g.length)
	}
	if a == 0 {
		if b == 0 {
			return math.Inf(1)
		}
		return m / b
	}
	disc := b*b + 4*a*m
	if disc < 0 { // rounding at a segment's far edge
		disc = 0
	}
	return 2 * m / (b + math.Sqrt(disc))
}

// A Pacer paces an open-loop run: the rate it intends at each moment and
// the intended start times of the requests, computed from the pacing alone
// (never from completions or from how long sleeps took), so a slow server
// or a late dispatcher cannot shift them. A [RateProfile] spaces requests
// evenly at a constant rate ([ConstantRate]) or along a step or linear ramp
// ([StepRate], [LinearRate]); [Poisson] draws exponential gaps at a
// profile's rate. Config.Pacer takes a Pacer of one's own.
type Pacer interface {
	// Rate is the intended rate at offset t, in requests per second.
	Rate(t time.Duration) float64
	// Expected is the expected number of requests due by offset t.
	Expected(t time.Duration) float64
	// Arrivals returns the intended start times, in order, of the
	// requests segment seg sends (all of them when seg.Count is 1): the
	// arrivals of index i mod seg.Count = seg.Index of the whole test.
	Arrivals(seg Segment) Arrivals
}

// Arrivals is a sequence of intended start times; [*Schedule] is one.
type Arrivals interface {
	// Next returns the intended start of the next request as an offset
	// from the run's origin, and false once no request is left.
	Next() (time.Duration, bool)
	// Index is the index in the whole test of the arrival Next returned
	// last.
	Index() uint64
}

// Arrivals returns p's evenly spaced arrivals for segment seg.
func (p RateProfile) Arrivals(seg Segment) Arrivals {
	return NewSegmentSchedule(p, ArrivalConstant, 0, seg)
}

// Poisson paces at Profile's rate with exponential gaps drawn from a
// generator seeded with Seed: under a ramp, a non-homogeneous Poisson
// process. The same seed gives the same arrivals.
type Poisson struct {
	Profile RateProfile
	Seed    uint64
}

// Rate is the profile's rate.
func (p Poisson) Rate(t time.Duration) float64 { return p.Profile.Rate(t) }

// Expected is the profile's expected count.
func (p Poisson) Expected(t time.Duration) float64 { return p.Profile.Expected(t) }

// Arrivals returns the seeded Poisson arrivals for segment seg.
func (p Poisson) Arrivals(seg Segment) Arrivals {
	return NewSegmentSchedule(p.Profile, ArrivalPoisson, p.Seed, seg)
}

// Arrival is the arrival process of an open-loop run.
type Arrival string

// The arrival processes.
const (
	// ArrivalConstant spaces requests evenly: the i-th request is due when
	// the expected count reaches i (t_i = i/λ at a constant rate).
	ArrivalConstant Arrival = "constant"
	// ArrivalPoisson draws exponential gaps from a seeded generator; under a
	// ramp it is a non-homogeneous Poisson process (time-transformed).
	ArrivalPoisson Arrival = "poisson"
)

// ParseArrival returns the arrival process named s.
func ParseArrival(s string) (Arrival, error) {
	switch a := Arrival(s); a {
	case ArrivalConstant, ArrivalPoisson:
		return a, nil
	}
	return "", fmt.Errorf("unknown arrival %q (want constant or poisson)", s)
}

// A Schedule yields the intended start times of an open-loop run, computed
// from the profile and the arrival process alone — never from completions or
// from how long sleeps took — so a slow server or a late dispatcher cannot
// shift it. A segment's schedule (see [NewSegmentSchedule]) yields every
// Count-th arrival of the whole test's schedule, bit for bit the same
// times. It is not safe for concurrent use.
type Schedule struct {
	profile RateProfile
	poisson bool
	rng     *rand.Rand
	n       uint64  // index in the whole schedule of the next arrival
	stride  uint64  // 1, or the number of segments
	last    uint64  // index of the arrival Next returned last
	m       float64 // Poisson: expected-count position of arrival n
	seg     int     // cursor: arrivals are monotone, so segments only advance
}

// NewSchedule returns the schedule of profile p with arrival process a; seed
// makes Poisson schedules reproducible.
func NewSchedule(p RateProfile, a Arrival, seed uint64) *Schedule {
	return NewSegmentSchedule(p, a, seed, Segment{Index: 0, Count: 1})
}

// NewSegmentSchedule returns the part of NewSchedule(p, a, seed) that
// segment seg sends: the arrivals whose index i in the whole schedule has
// i mod seg.Count = seg.Index. The segments' schedules are disjoint and
// their union is the whole schedule, with identical times: every segment
// walks the whole arrival sequence (for Poisson, it draws every gap in the
// same order) and keeps its own arrivals.
func NewSegmentSchedule(p RateProfile, a Arrival, seed uint64, seg Segment) *Schedule {
	if seg.Count < 1 {
		seg = Segment{Index: 0, Count: 1}
	}
	s := &Schedule{profile: p, poisson: a == ArrivalPoisson, n: uint64(seg.Index), stride: uint64(seg.Count)}
	if s.poisson {
		s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		s.m = s.rng.ExpFloat64()
		for range seg.Index {
			s.m += s.rng.ExpFloat64()
		}
	}
	return s
}

// Next returns the intended start of the next request as an offset from the
// schedule's origin, and false once the rate has fallen to zero for good.
func (s *Schedule) Next() (time.Duration, bool) {
	var m float64
	if s.poisson {
		m = s.m
		for range s.stride { // the other segments' arrivals, then ours
			s.m += s.rng.ExpFloat64()
		}
	} else {
		m = float64(s.n) // multiplied, not accumulated: no drift
	}
	s.last = s.n
	s.n += s.stride
	segs := s.profile.segs
	for s.seg+1 < len(segs) && m >= segs[s.seg+1].before {
		s.seg++
	}
	g := segs[s.seg]
	u := g.offset(m - g.before)
	if math.IsInf(u, 1) {
		return 0, false
	}
	// Rounded, not truncated: 1.2+0.6 is 1.7999999999999998 in floating
	// point, which truncation would put one nanosecond inside a 1.8 s window.
	return time.Duration(math.Round((g.start + u) * 1e9)), true
}

// Index returns the index in the whole test's schedule of the arrival Next
// returned last: request i of the test, whichever segment sends it.
func (s *Schedule) Index() uint64 { return s.last }
