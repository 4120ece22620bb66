// Command segmentcheck prints how a merged distributed load test compares
// with its segments and with a single-process run of the same test; it is
// the check behind `make distributed-demo`. It exits 1 when the merge is not
// exact: the merged request count differs from the single-process schedule's
// or a merged histogram is not the bin-for-bin sum of the segments'.
//
// With -rerun, the same test run once more in one process, it also prints
// how far two single-process runs of the identical test land from each
// other: the machine's own run-to-run spread of the p99, which is the scale
// a merged p99 can be judged against.
//
//	segmentcheck [-rerun SINGLE2.json] MERGED.json SINGLE.json SEGMENT.json...
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/oipkit/oipkit/loadgen"
)

func main() {
	rerunPath := flag.String("rerun", "", "the same test run once more in one process")
	flag.Parse()
	args := flag.Args()
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: segmentcheck [-rerun SINGLE2.json] MERGED.json SINGLE.json SEGMENT.json...")
		os.Exit(1)
	}
	merged, err := loadgen.ReadResultFile(args[0])
	var rerun *loadgen.Result
	if err == nil && *rerunPath != "" {
		rerun, err = loadgen.ReadResultFile(*rerunPath)
	}
	if err == nil {
		var single *loadgen.Result
		if single, err = loadgen.ReadResultFile(args[1]); err == nil {
			var segs []*loadgen.Result
			for _, p := range args[2:] {
				var r *loadgen.Result
				if r, err = loadgen.ReadResultFile(p); err != nil {
					break
				}
				segs = append(segs, r)
			}
			if err == nil {
				ok := check(merged, single, segs)
				if rerun != nil {
					ok = spread(merged, single, rerun) && ok
				}
				if !ok {
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
	for _, q := range []float64{50, 90, 99} {
		mq, sq := merged.Histograms.Response.Quantile(q), single.Histograms.Response.Quantile(q)
		fmt.Printf("response p%-3v         merged %v, single process %v, difference %v (%+.2f%%)\n",
			q, mq, sq, mq-sq, 100*(float64(mq)/float64(sq)-1))
	}
	// The acceptance: the merged p99 within the histogram's precision of
	// the single process's. With 3 significant digits a value is known to
	// its bucket; two p99s are equal to that precision when they are at
	// most one bucket apart.
	mp, sp := merged.Histograms.Response.Quantile(99), single.Histograms.Response.Quantile(99)
	width := bucketWidth(single.Histograms.Response, int64(max(mp, sp)))
	diff := mp - sp
	if diff < 0 {
		diff = -diff
	}
	met := "met"
	if int64(diff) > width {
		met = "NOT MET"
	}
	fmt.Printf("p99 precision:       the histogram's bucket at %v is %v wide (3 significant digits); the p99s differ by %v (%.1f buckets): %s\n",
		max(mp, sp), time.Duration(width), diff, float64(diff)/float64(width), met)
	return ok
}

// spread prints how far the p99s of two single-process runs of the same
// test are apart, beside the merged p99's difference from the first. The
// acceptance asks the merged p99 to be within one bucket of a single
// process's; when the single process does not reproduce its own p99 to one
// bucket, the machine's noise, not the merge, sets the difference. It
// returns false when the rerun is not the same test.
func spread(merged, single, rerun *loadgen.Result) bool {
	if rerun.TestID != single.TestID || rerun.Counts.Scheduled != single.Counts.Scheduled {
		fmt.Printf("rerun:               NOT THE SAME TEST (test %s, %d scheduled; want test %s, %d)\n",
			loadgen.ShortID(rerun.TestID), rerun.Counts.Scheduled, loadgen.ShortID(single.TestID), single.Counts.Scheduled)
		return false
	}
	a, b := single.Histograms.Response.Quantile(99), rerun.Histograms.Response.Quantile(99)
	lo, hi := min(a, b), max(a, b)
	width := bucketWidth(single.Histograms.Response, int64(hi))
	fmt.Printf("single-process rerun: p99 %v and %v: the same test in one process differs from itself by %v (%.1f buckets)\n",
		a, b, hi-lo, float64(hi-lo)/float64(width))
	m := merged.Histograms.Response.Quantile(99)
	d := m - a
	if d < 0 {
		d = -d
	}
	fmt.Printf("p99 differences:      merged against single process %v, single process against itself %v\n", d, hi-lo)
	return true
}

// bucketWidth is the width of the histogram bucket holding v: the range of
// values the histogram cannot tell apart from v.
func bucketWidth(h *loadgen.Histogram, v int64) int64 {
	d := h.HDR()
	lo, hi := v, v
	for lo > 0 && d.ValuesAreEquivalent(lo-1, v) {
		lo--
	}
	for d.ValuesAreEquivalent(hi+1, v) {
		hi++
	}
	return hi - lo + 1
}
