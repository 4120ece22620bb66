package loadgen

import (
	"math"
	"testing"
	"time"
)

func mustRate(t *testing.T, spec string) RateProfile {
	t.Helper()
	p, err := ParseRate(spec)
	if err != nil {
		t.Fatalf("ParseRate(%q): %v", spec, err)
	}
	return p
}

// countPerWindow counts schedule offsets falling in consecutive windows of
// width w, up to n windows.
func countPerWindow(s *Schedule, w time.Duration, n int) []int {
	counts := make([]int, n)
	for {
		off, ok := s.Next()
		if !ok || off >= w*time.Duration(n) {
			return counts
		}
		counts[off/w]++
	}
}

func TestConstantScheduleIsExactAndDoesNotDrift(t *testing.T) {
	s := NewSchedule(mustRate(t, "1000"), ArrivalConstant, 1)
	for i := range 5 {
		off, _ := s.Next()
		if want := time.Duration(i) * time.Millisecond; off != want {
			t.Fatalf("t_%d = %v, want %v", i, off, want)
		}
	}
	// t_i = i/λ is computed, not accumulated: the millionth start is exact.
	s = NewSchedule(mustRate(t, "3"), ArrivalConstant, 1)
	var off time.Duration
	for range 1_000_001 {
		off, _ = s.Next()
	}
	if want := time.Duration(333_333_333_333_333); absDur(off-want) > time.Microsecond {
		t.Fatalf("t_1e6 at 3/s = %v, want %v", off, want)
	}
}

func TestPoissonScheduleMeanAndSeed(t *testing.T) {
	const rate, n = 500.0, 200_000
	s := NewSchedule(mustRate(t, "500"), ArrivalPoisson, 42)
	var last time.Duration
	var sum, sumSq float64
	for range n {
		off, _ := s.Next()
		gap := (off - last).Seconds()
		if gap < 0 {
			t.Fatalf("schedule went backwards: %v after %v", off, last)
		}
		sum += gap
		sumSq += gap * gap
		last = off
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	// Exponential gaps: mean = sd = 1/λ. The standard error of the mean over
	// 2e5 draws is 0.22%; allow 2%.
	if want := 1 / rate; math.Abs(mean-want)/want > 0.02 || math.Abs(sd-want)/want > 0.02 {
		t.Errorf("gap mean %.6fs sd %.6fs, want both %.6fs", mean, sd, want)
	}
	a, b := NewSchedule(mustRate(t, "500"), ArrivalPoisson, 7), NewSchedule(mustRate(t, "500"), ArrivalPoisson, 7)
	c := NewSchedule(mustRate(t, "500"), ArrivalPoisson, 8)
	same, differ := true, false
	for range 100 {
		x, _ := a.Next()
		y, _ := b.Next()
		z, _ := c.Next()
		same = same && x == y
		differ = differ || x != z
	}
	if !same || !differ {
		t.Errorf("seeded schedules: same seed equal %v, other seed differs %v", same, differ)
	}
}

func TestStepRampCountsPerSegment(t *testing.T) {
	p := mustRate(t, "step:100:400:100:2s")
	got := countPerWindow(NewSchedule(p, ArrivalConstant, 1), 2*time.Second, 6)
	want := []int{200, 400, 600, 800, 800, 800} // the last step holds
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("counts per 2s step = %v, want %v", got, want)
		}
	}
	if r := p.Rate(3 * time.Second); r != 200 {
		t.Errorf("rate at 3s = %v, want 200", r)
	}
	down := countPerWindow(NewSchedule(mustRate(t, "step:300:100:-100:1s"), ArrivalConstant, 1), time.Second, 4)
	if down[0] != 300 || down[1] != 200 || down[2] != 100 || down[3] != 100 {
		t.Errorf("descending steps = %v, want [300 200 100 100]", down)
	}
}

func TestLinearRampCounts(t *testing.T) {
	p := mustRate(t, "linear:0:1000:10s")
	got := countPerWindow(NewSchedule(p, ArrivalConstant, 1), 5*time.Second, 3)
	// ∫0..5 100t dt = 1250, ∫5..10 = 3750, then 1000/s for 5s.
	want := []int{1250, 3750, 5000}
	for i := range want {
		if d := got[i] - want[i]; d < -1 || d > 1 {
			t.Fatalf("counts per 5s = %v, want %v (±1)", got, want)
		}
	}
	if r := p.Rate(2500 * time.Millisecond); math.Abs(r-250) > 1e-9 {
		t.Errorf("rate at 2.5s = %v, want 250", r)
	}
	// Poisson under the ramp follows the same expected counts.
	pc := countPerWindow(NewSchedule(p, ArrivalPoisson, 3), 5*time.Second, 3)
	for i := range want {
		if math.Abs(float64(pc[i]-want[i])) > 5*math.Sqrt(float64(want[i])) {
			t.Errorf("Poisson counts per 5s = %v, want about %v", pc, want)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	for _, s := range []string{"", "0", "-5", "abc", "step:100:1000:0:5s", "step:100:1000:-100:5s",
		"step:100:1000:100", "step:100:1000:100:0s", "linear:100:1000", "linear:100:0:10s", "sine:1:2:3", "1:2"} {
		if _, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) succeeded, want an error", s)
		}
	}
	for _, s := range []string{"1000", "0.5", "step:100:1000:100:5s", "linear:0:1000:30s", "linear:1000:100:1m"} {
		p, err := ParseRate(s)
		if err != nil || !p.Valid() {
			t.Errorf("ParseRate(%q) = %v, %v", s, p, err)
		}
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
