package loadgen

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseLevels parses a sweep range "START:END[:STEP]": the levels START,
// START+STEP, ... up to END, or with STEP "xF" (or "*F") START, START·F,
// START·F², ...; END is always the last level. STEP defaults to 1, as in
// perf_analyzer's concurrency-range option. integer asks for whole levels (a
// concurrency). At most MaxLevels levels.
func ParseLevels(spec string, integer bool) (Levels, error) {
	v, err := parseLevels(spec, integer)
	if err != nil {
		return Levels{}, err
	}
	return Levels{spec: spec, values: v}, nil
}

// Levels are the load levels of a sweep or the bounds of a search, as
// [ParseLevels] reads them; they are written back as given.
type Levels struct {
	spec   string
	values []float64
}

// Values are the levels, in increasing order.
func (l Levels) Values() []float64 { return l.values }

// String is the range as given.
func (l Levels) String() string { return l.spec }

// IsZero reports whether no range was given.
func (l Levels) IsZero() bool { return l.spec == "" }

// MarshalText writes the range as given.
func (l Levels) MarshalText() ([]byte, error) { return []byte(l.spec), nil }

// UnmarshalText parses a range (Config.Normalize checks that a
// concurrency range is whole).
func (l *Levels) UnmarshalText(b []byte) error {
	v, err := ParseLevels(string(b), false)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

func parseLevels(spec string, integer bool) ([]float64, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, fmt.Errorf("range %q: want START:END[:STEP], e.g. 1:32:x2 or 100:1000:100", spec)
	}
	num := func(what, s string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return 0, fmt.Errorf("range %q: %s %q is not a number", spec, what, s)
		case v <= 0:
			return 0, fmt.Errorf("range %q: %s must be positive", spec, what)
		case integer && v != math.Trunc(v):
			return 0, fmt.Errorf("range %q: %s must be a whole number", spec, what)
		}
		return v, nil
	}
	start, err := num("start", parts[0])
	if err != nil {
		return nil, err
	}
	end, err := num("end", parts[1])
	if err != nil {
		return nil, err
	}
	if end < start {
		return nil, fmt.Errorf("range %q: the end is below the start", spec)
	}
	step, factor := 1.0, 0.0
	if len(parts) == 3 {
		s := strings.TrimSpace(parts[2])
		if f, ok := strings.CutPrefix(s, "x"); ok || strings.HasPrefix(s, "*") {
			if !ok {
				f = s[1:]
			}
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || !(v > 1) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("range %q: factor %q must be a number above 1", spec, s)
			}
			factor = v
		} else if step, err = num("step", s); err != nil {
			return nil, err
		}
	}
	var levels []float64
	for v, i := start, 0; v <= end*(1+1e-9); i++ {
		if len(levels) == MaxLevels {
			return nil, fmt.Errorf("range %q: more than %d levels; use a larger step or a factor (xF)", spec, MaxLevels)
		}
		if integer {
			v = math.Round(v)
		}
		if len(levels) == 0 || v > levels[len(levels)-1] {
			levels = append(levels, v)
		}
		if factor > 0 {
			v = start * math.Pow(factor, float64(i+1))
		} else {
			v = start + step*float64(i+1)
		}
	}
	if levels[len(levels)-1] < end {
		if len(levels) == MaxLevels {
			return nil, fmt.Errorf("range %q: more than %d levels; use a larger step or a factor (xF)", spec, MaxLevels)
		}
		levels = append(levels, end)
	}
	return levels, nil
}
