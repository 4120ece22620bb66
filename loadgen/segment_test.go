package loadgen

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// arrival is one entry of a schedule: request i of the test at offset off.
type arrival struct {
	i   uint64
	off time.Duration
}

// arrivals walks s up to dur.
func arrivals(s *Schedule, dur time.Duration) []arrival {
	var out []arrival
	for {
		off, ok := s.Next()
		if !ok || off >= dur {
			return out
		}
		out = append(out, arrival{s.Index(), off})
	}
}

// TestSegmentSchedulesUnionIsTheSchedule is the split's property: for any
// seed, rate profile, arrival process and number of segments, the
// segments' schedules are disjoint and their union is the single-process
// schedule, bit for bit (every request at the same intended offset).
func TestSegmentSchedulesUnionIsTheSchedule(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	profiles := func() string {
		switch rng.IntN(4) {
		case 0:
			return fmt.Sprintf("%.3f", 0.5+rng.Float64()*3000)
		case 1:
			return fmt.Sprintf("%d", 1+rng.IntN(20000))
		case 2:
			from := 1 + rng.IntN(500)
			return fmt.Sprintf("step:%d:%d:%d:%dms", from, from+50*(1+rng.IntN(5)), 50, 100+rng.IntN(400))
		}
		return fmt.Sprintf("linear:%d:%d:%dms", rng.IntN(300), 1+rng.IntN(3000), 200+rng.IntN(800))
	}
	for c := range 300 {
		spec := profiles()
		p := mustRate(t, spec)
		a := []Arrival{ArrivalConstant, ArrivalPoisson}[rng.IntN(2)]
		seed := rng.Uint64()
		n := []int{1, 2, 3, 4, 5, 7, 8, 13, 64}[rng.IntN(9)]
		// About 2000 arrivals whatever the rate.
		dur := time.Duration(2000/p.Rate(0)*1e9) + time.Second
		if dur > 10*time.Second {
			dur = 10 * time.Second
		}
		want := arrivals(NewSchedule(p, a, seed), dur)
		var got []arrival
		for i := range n {
			part := arrivals(NewSegmentSchedule(p, a, seed, Segment{Index: i, Count: n}), dur)
			for _, x := range part {
				if int(x.i%uint64(n)) != i {
					t.Fatalf("case %d (%s %s seed %d, %d segments): segment %d sent request %d", c, spec, a, seed, n, i, x.i)
				}
			}
			got = append(got, part...)
		}
		slices.SortFunc(got, func(x, y arrival) int { return int(x.i) - int(y.i) })
		if len(got) != len(want) {
			t.Fatalf("case %d (%s %s seed %d, %d segments): %d arrivals in the segments, %d in the schedule", c, spec, a, seed, n, len(got), len(want))
		}
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("case %d (%s %s seed %d, %d segments): arrival %d is %+v in the segments, %+v in the schedule", c, spec, a, seed, n, k, got[k], want[k])
			}
		}
	}
}

// TestSegmentShares checks the remainder rule: shares add up to the total,
// differ by at most one, and the larger ones are the first segments'; an
// open loop's index rule (request i is segment i mod N's) gives the same
// share of the first n requests.
func TestSegmentShares(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for total := int64(0); total <= 50; total++ {
			var sum int64
			for i := range n {
				s := Segment{Index: i, Count: n}
				got := s.Share(total)
				want := total / int64(n)
				if int64(i) < total%int64(n) {
					want++
				}
				if got != want {
					t.Fatalf("segment %s of %d: share %d, want %d", s, total, got, want)
				}
				var byIndex int64
				for r := int64(0); r < total; r++ {
					if r%int64(n) == int64(i) {
						byIndex++
					}
				}
				if byIndex != got {
					t.Fatalf("segment %s of the first %d requests: %d by index, share %d", s, total, byIndex, got)
				}
				sum += got
			}
			if sum != total {
				t.Fatalf("%d split in %d: shares add up to %d", total, n, sum)
			}
		}
	}
	// 10 over 4: 3, 3, 2, 2.
	for i, want := range []int64{3, 3, 2, 2} {
		if got := (Segment{Index: i, Count: 4}).Share(10); got != want {
			t.Errorf("10 over 4, segment %d: %d, want %d", i, got, want)
		}
	}
}

func TestParseSegment(t *testing.T) {
	for in, want := range map[string]Segment{"0/1": {0, 1}, "0/4": {0, 4}, "3/4": {3, 4}, " 2 / 8 ": {2, 8}} {
		if got, err := ParseSegment(in); err != nil || got != want {
			t.Errorf("ParseSegment(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"4/4": "below the count", "5/4": "below the count", "-1/4": "below the count", "0/0": "count must be",
		"1/100001": "count must be", "a/b": "whole numbers", "3": "INDEX/COUNT", "": "INDEX/COUNT",
		"$(JOB_COMPLETION_INDEX)/4": "whole numbers", "1/2/3": "whole numbers",
	} {
		_, err := ParseSegment(in)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseSegment(%q) = %v, want an error saying %q", in, err, why)
		}
	}
}

func segConfig(rate string) Config {
	c := Config{
		Target: TargetConfig{HTTP: "http://127.0.0.1:8000", Model: "add_sub"},
		Load:   LoadConfig{Rate: rateOf(rate), Duration: Duration(10 * time.Second)},
	}
	if err := c.Normalize(); err != nil {
		panic(err)
	}
	return c
}

// TestTestIDCoversTheTestOnly: the identity ignores the segment, the
// start, gates and per-process settings, and changes with anything that
// shapes the load the server sees.
func TestTestIDCoversTheTestOnly(t *testing.T) {
	base := segConfig("1000")
	id := TestID(base)
	same := map[string]func(*Config){
		"segment":         func(c *Config) { c.Load.Segment = &Segment{Index: 2, Count: 4} },
		"start":           func(c *Config) { c.Load.StartAt = time.Now() },
		"thresholds":      func(c *Config) { c.Thresholds = ths("p99<1ms") },
		"error bound":     func(c *Config) { v := 0.5; c.Checks.MaxErrorRate = &v },
		"lag tolerance":   func(c *Config) { c.Checks.LagTolerance = Duration(time.Second) },
		"max in flight":   func(c *Config) { c.Load.MaxInFlight = 7 },
		"connections":     func(c *Config) { c.Target.Connections = 3 },
		"ready timeout":   func(c *Config) { c.Target.ReadyTimeout = Duration(time.Hour) },
		"percentile":      func(c *Config) { c.Percentile = 99.9 },
		"header value":    func(c *Config) { c.Target.Headers = []string{"Authorization: a"} },
		"progress":        func(c *Config) { c.Progress = func(IntervalStats) {} },
		"ready to listen": func(c *Config) { c.Target.WaitForListener = true },
	}
	headered := base
	headered.Target.Headers = []string{"Authorization: b"}
	for name, change := range same {
		c := base
		if name == "header value" {
			c = headered
		}
		change(&c)
		want := id
		if name == "header value" {
			want = TestID(headered)
		}
		if got := TestID(c); got != want {
			t.Errorf("changing the %s changed the test's identity", name)
		}
	}
	differ := map[string]func(*Config){
		"rate":        func(c *Config) { c.Load.Rate = rateOf("1001") },
		"arrival":     func(c *Config) { c.Load.Arrival = ArrivalPoisson },
		"seed":        func(c *Config) { c.Inputs.Seed = 2 },
		"duration":    func(c *Config) { c.Load.Duration = Duration(11 * time.Second) },
		"warm-up":     func(c *Config) { c.Load.Warmup = Duration(time.Second) },
		"interval":    func(c *Config) { c.Load.Interval = Duration(2 * time.Second) },
		"requests":    func(c *Config) { c.Load.Requests = 100 },
		"model":       func(c *Config) { c.Target.Model = "identity" },
		"target":      func(c *Config) { c.Target.HTTP = "http://127.0.0.1:9000" },
		"protocol":    func(c *Config) { c.Target.Protocol = "http-binary" },
		"header name": func(c *Config) { c.Target.Headers = []string{"X-Other: b"} },
		"parameters":  func(c *Config) { c.Inputs.Parameters = []string{"delay_ms=1"} },
		"data":        func(c *Config) { c.Inputs.Data = "zero" },
		"timeout":     func(c *Config) { c.Target.Timeout = Duration(time.Second) },
	}
	for name, change := range differ {
		c := base
		c.Target.Headers = []string{"Authorization: a"}
		ref := TestID(c)
		change(&c)
		if TestID(c) == ref {
			t.Errorf("changing the %s kept the test's identity", name)
		}
	}
	if len(id) != 64 {
		t.Errorf("identity %q: want 64 hex digits of SHA-256", id)
	}

	// An input file counts by its content, not its path.
	dir := t.TempDir()
	a, b, other := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "c.json")
	for p, body := range map[string]string{a: `{"data":[{}]}`, b: `{"data":[{}]}`, other: `{"data":[{},{}]}`} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	withFile := func(p string) string { c := base; c.Inputs.File = p; return TestID(c) }
	if withFile(a) != withFile(b) || withFile(a) == withFile(other) {
		t.Error("an input file must count by its content")
	}
}

// TestSegmentConfigRefusals: what a segment cannot do alone is refused
// with a line that says why and what to do instead.
func TestSegmentConfigRefusals(t *testing.T) {
	seg := func(c Config) Config { c.Load.Segment = &Segment{Index: 1, Count: 4}; return c }
	grpc := Config{Target: TargetConfig{GRPC: "127.0.0.1:8001", Model: "m"}}
	for name, c := range map[string]Config{
		"sweep":          seg(Config{Target: grpc.Target, Load: LoadConfig{ConcurrencyRange: mustLevels("1:8")}}),
		"rate sweep":     seg(Config{Target: grpc.Target, Load: LoadConfig{RateRange: mustLevels("100:400:100")}}),
		"SLO search":     seg(Config{Target: grpc.Target, SLO: ths("p99<10ms")}),
		"stability":      seg(Config{Target: grpc.Target, Load: LoadConfig{Concurrency: 8, Stability: &StabilityConfig{}}}),
		"abort-on-fail":  seg(Config{Target: grpc.Target, Load: LoadConfig{Concurrency: 8}, AbortOnFail: true}),
		"threshold":      seg(Config{Target: grpc.Target, Load: LoadConfig{Concurrency: 8}, Thresholds: ths("p99<1s")}),
		"few workers":    seg(Config{Target: grpc.Target, Load: LoadConfig{Concurrency: 3}}),
		"few requests":   seg(Config{Target: grpc.Target, Load: LoadConfig{Rate: rateOf("100"), Requests: 3}}),
		"warm-up count":  seg(Config{Target: grpc.Target, Load: LoadConfig{Rate: rateOf("100"), WarmupRequests: 100, StartAt: time.Now().Add(time.Hour)}}),
		"index past end": {Target: grpc.Target, Load: LoadConfig{Rate: rateOf("100"), Segment: &Segment{Index: 4, Count: 4}}},
	} {
		err := c.Normalize()
		if err == nil {
			t.Errorf("%s with a segment: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: a multi-line error: %v", name, err)
		}
	}
	ok := seg(Config{Target: grpc.Target, Load: LoadConfig{Concurrency: 4, Requests: 4, WarmupRequests: 2}})
	if err := ok.Normalize(); err != nil {
		t.Errorf("concurrency 4 and 4 requests over 4 segments: %v", err)
	}
}

func fakeSegment(t *testing.T, cfg Config, i, n int, start time.Time) *Result {
	t.Helper()
	c := cfg
	c.Load.Segment = &Segment{Index: i, Count: n}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	r := NewResult(c)
	r.Start, r.EndReason = start, EndCompleted
	r.Duration, r.Elapsed = Duration(time.Second), Duration(time.Second)
	r.Sources = []string{fmt.Sprintf("segment-%d.json", i)}
	for v := range 10 {
		r.Histograms.Response.Record(int64(1000 * (v + 1) * (i + 1)))
	}
	r.Counts = Counts{Scheduled: 10, Sent: 10, Completed: 10, OK: 10}
	return r
}

func TestReadResultRefusesABadSegment(t *testing.T) {
	cfg := segConfig("100")
	r := fakeSegment(t, cfg, 0, 2, time.Now())
	r.Config.Load.Segment = &Segment{Index: 0, Count: 1 << 30}
	var b strings.Builder
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(strings.NewReader(b.String())); err == nil || !strings.Contains(err.Error(), "count must be") {
		t.Errorf("a result claiming 2^30 segments: %v", err)
	}
}
