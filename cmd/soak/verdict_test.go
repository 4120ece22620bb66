package main

import (
	"math"
	"testing"
	"time"
)

// series returns a 30-minute run sampled every 5 s: every series flat at a
// plausible level with deterministic noise (a GC sawtooth on the heap, a
// few in-flight goroutines and files coming and going), then changed by
// edit.
func series(edit func(s *Sample)) []Sample {
	var out []Sample
	for i := range 360 {
		t := float64(i * 5)
		s := Sample{T: t,
			RSS:        40<<20 + float64(i%7)*(300<<10),
			HeapInuse:  6<<20 + float64(i%12)*(1<<20), // sawtooth: collected every minute
			HeapObj:    30_000 + float64(i%12)*4_000,
			Goroutines: 60 + float64(i%5),
			Files:      20 + float64(i%3),
			Threads:    12,
		}
		if i%50 == 25 { // a burst of in-flight work caught by one sample
			s.Goroutines += 40
			s.Files += 30
		}
		if edit != nil {
			edit(&s)
		}
		out = append(out, s)
	}
	return out
}

func verdicts(t *testing.T, samples []Sample) map[string]Verdict {
	t.Helper()
	out := map[string]Verdict{}
	for _, v := range Decide(samples, WarmupOf(30*time.Minute).Seconds(), Rules) {
		out[v.Series] = v
		t.Logf("%s pass=%v: %s; %s", v.Series, v.Pass, v.Detail, v.Bound)
	}
	return out
}

func TestDecideFlatPasses(t *testing.T) {
	for name, v := range verdicts(t, series(nil)) {
		if !v.Pass {
			t.Errorf("%s failed on a flat series: %s; %s", name, v.Detail, v.Bound)
		}
	}
}

// Each leak fails its own series and only it.
func TestDecideLeaksFail(t *testing.T) {
	for _, c := range []struct {
		series string
		leak   func(s *Sample)
	}{
		// 30 MiB per hour: above the 20 MiB/h and 10% bounds.
		{"rss", func(s *Sample) { s.RSS += s.T * (30 << 20) / 3600 }},
		// 15 MiB per hour of heap, over a sawtooth of 11 MiB.
		{"heap_inuse", func(s *Sample) { s.HeapInuse += s.T * (15 << 20) / 3600 }},
		// One goroutine every 30 s (a stuck handler per reconnect, say).
		{"goroutines", func(s *Sample) { s.Goroutines += math.Floor(s.T / 30) }},
		// One file every minute.
		{"open_files", func(s *Sample) { s.Files += math.Floor(s.T / 60) }},
	} {
		t.Run(c.series, func(t *testing.T) {
			for name, v := range verdicts(t, series(c.leak)) {
				if want := name != c.series; v.Pass != want {
					t.Errorf("%s pass = %v, want %v: %s; %s", name, v.Pass, want, v.Detail, v.Bound)
				}
			}
		})
	}
}

// A slope that is steep when projected to an hour but smaller than the
// series' noise over a short run passes: a 2-minute run cannot tell it
// from the sawtooth.
func TestDecideShortRunNoise(t *testing.T) {
	var samples []Sample
	for i := range 24 { // 2 minutes every 5 s
		tt := float64(i * 5)
		samples = append(samples, Sample{T: tt, RSS: 40<<20 + float64(i%2)*(3<<20) + tt*(1<<20)/120,
			HeapInuse: 6 << 20, Goroutines: 60, Files: 20})
	}
	v := Decide(samples, WarmupOf(2*time.Minute).Seconds(), Rules)[0]
	if v.Series != "rss" || !v.Pass {
		t.Errorf("rss: %+v", v)
	}
	// The same 1 MiB a minute, smooth, over 30 minutes fails.
	if v := verdicts(t, series(func(s *Sample) { s.RSS += s.T * (1 << 20) / 60 }))["rss"]; v.Pass {
		t.Errorf("rss rising 60 MiB/h passed: %s", v.Detail)
	}
}

func TestDecideTooFewSamples(t *testing.T) {
	for _, v := range Decide(series(nil)[:8], 30, Rules) {
		if v.Pass == v.Judged {
			t.Errorf("%s with 2 samples after the warm-up: pass %v, judged %v", v.Series, v.Pass, v.Judged)
		}
	}
}

func TestWarmupOf(t *testing.T) {
	if w := WarmupOf(2 * time.Minute); w != 30*time.Second {
		t.Errorf("2m: %v", w)
	}
	if w := WarmupOf(30 * time.Minute); w != 6*time.Minute {
		t.Errorf("30m: %v", w)
	}
}
