package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"
)

// burstPacer is a pacer of one's own: n requests in bursts of 5, one
// burst every 20ms.
type burstPacer struct{ n uint64 }

func (p burstPacer) Rate(time.Duration) float64       { return 250 }
func (p burstPacer) Expected(t time.Duration) float64 { return 250 * t.Seconds() }
func (p burstPacer) Arrivals(Segment) Arrivals        { return &bursts{n: p.n} }

type bursts struct{ i, n uint64 }

func (b *bursts) Index() uint64 { return b.i - 1 }

func (b *bursts) Next() (time.Duration, bool) {
	b.i++
	return time.Duration((b.i-1)/5) * 20 * time.Millisecond, b.i <= b.n
}

// A run paced by a Pacer of its own sends exactly its arrivals, with no
// Load.Rate, and says so.
func TestCustomPacer(t *testing.T) {
	target := TargetFunc(func(context.Context, uint64) error { return nil })
	cfg := Config{Pacer: burstPacer{n: 20}, Load: LoadConfig{MaxInFlight: 1, Duration: Duration(time.Second)}}
	res, err := Run(context.Background(), target, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Scheduled != 20 || res.Counts.OK+res.Counts.Dropped != 20 || !res.OpenLoop() {
		t.Errorf("counts %+v, open loop %v", res.Counts, res.OpenLoop())
	}
	if d := DescribeLoad(res.Config); !strings.Contains(d, "paced by loadgen.burstPacer") {
		t.Errorf("load %q", d)
	}
	cfg.Load.Rate = rateOf("100")
	if _, err := Run(context.Background(), target, cfg); err == nil || !strings.Contains(err.Error(), "Config.Pacer") {
		t.Errorf("a pacer and a rate: %v", err)
	}
}

// The rate profiles and Poisson are Pacers; Poisson's arrivals are the
// seeded schedule's.
func TestPacersAreSchedules(t *testing.T) {
	p, err := ConstantRate(100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pacer   Pacer
		arrival Arrival
	}{{p, ArrivalConstant}, {Poisson{Profile: p, Seed: 7}, ArrivalPoisson}} {
		a, want := c.pacer.Arrivals(Segment{Count: 1}), NewSchedule(p, c.arrival, 7)
		for range 50 {
			got, _ := a.Next()
			w, _ := want.Next()
			if got != w || a.Index() != want.Index() {
				t.Fatalf("%T: arrival %d at %v, want %v", c.pacer, a.Index(), got, w)
			}
		}
	}
}
