// Command segmentcheck prints how a merged distributed load test compares
// with its segments and with a single-process run of the same test; it is
// the check behind `make distributed-demo`. It exits 1 when the merge is not
// exact: the merged request count differs from the single-process schedule's
// or a merged histogram is not the bin-for-bin sum of the segments'.
//
//	segmentcheck MERGED.json SINGLE.json SEGMENT.json...
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/oipkit/oipkit/loadgen"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: segmentcheck MERGED.json SINGLE.json SEGMENT.json...")
		os.Exit(1)
	}
	merged, err := loadgen.ReadResultFile(os.Args[1])
	if err == nil {
		var single *loadgen.Result
		if single, err = loadgen.ReadResultFile(os.Args[2]); err == nil {
			var segs []*loadgen.Result
			for _, p := range os.Args[3:] {
				var r *loadgen.Result
				if r, err = loadgen.ReadResultFile(p); err != nil {
					break
				}
				segs = append(segs, r)
			}
			if err == nil {
				if !check(merged, single, segs) {
					os.Exit(1)
				}
				return
			}
		}
	}
	fmt.Fprintln(os.Stderr, "segmentcheck:", err)
	os.Exit(1)
}

func check(merged, single *loadgen.Result, segs []*loadgen.Result) bool {
	ok := true
	var sum int64
	for _, s := range segs {
		sum += s.Counts.Scheduled
	}
	fmt.Printf("segments:            %d, test %s\n", len(segs), loadgen.ShortID(merged.TestID))
	fmt.Printf("scheduled requests:  merged %d = segments' sum %d; single process %d\n",
		merged.Counts.Scheduled, sum, single.Counts.Scheduled)
	if merged.Counts.Scheduled != single.Counts.Scheduled || sum != merged.Counts.Scheduled {
		fmt.Println("  MISMATCH: the merged test did not schedule the single-process schedule's requests")
		ok = false
	}
	for _, h := range []struct {
		name string
		get  func(*loadgen.Result) *loadgen.Histogram
	}{
		{"response", func(r *loadgen.Result) *loadgen.Histogram { return r.Histograms.Response }},
		{"service", func(r *loadgen.Result) *loadgen.Histogram { return r.Histograms.Service }},
		{"send lag", func(r *loadgen.Result) *loadgen.Histogram { return r.Histograms.SendLag }},
	} {
		total := loadgen.NewHistogram()
		for _, s := range segs {
			if x := h.get(s); x != nil {
				total.Merge(x)
			}
		}
		m := h.get(merged)
		equal := m != nil && total.Equal(m)
		fmt.Printf("%-9s histogram:  merged equals the segments' sum bin for bin: %v (%d values)\n", h.name, equal, total.Count())
		ok = ok && equal
	}
	mp, sp := merged.Histograms.Response.Quantile(99), single.Histograms.Response.Quantile(99)
	fmt.Printf("response p99:        merged %v, single process %v, ratio %.3f (histogram precision ±0.1%%: 3 significant digits)\n",
		round(mp), round(sp), float64(mp)/float64(sp))
	mp50, sp50 := merged.Histograms.Response.Quantile(50), single.Histograms.Response.Quantile(50)
	fmt.Printf("response p50:        merged %v, single process %v, ratio %.3f\n", round(mp50), round(sp50), float64(mp50)/float64(sp50))
	return ok
}

func round(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
