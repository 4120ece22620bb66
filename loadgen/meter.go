package loadgen

import (
	"math"
	"runtime/metrics"
	"syscall"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// meter watches the generator itself during the measured window: Go GC
// pauses and scheduling latencies (runtime/metrics), a hiccup goroutine in
// the manner of jHiccup, and the process's CPU time.
type meter struct {
	samples   []metrics.Sample
	gcBefore  *metrics.Float64Histogram
	schBefore *metrics.Float64Histogram
	cpuBefore float64

	hiccup *hdr.Histogram
	done   chan struct{}
	exited chan struct{}

	gc, sched   PauseStats
	cpuSeconds  float64
	wallSeconds float64
	start       time.Time
}

// PauseStats summarizes a runtime/metrics histogram of pauses over the
// measured window. Values are nanoseconds, at the runtime's bucket
// resolution (upper bucket bounds, so they never understate).
type PauseStats struct {
	Count int64 `json:"count"`
	Total int64 `json:"totalNs"`
	P99   int64 `json:"p99Ns"`
	Max   int64 `json:"maxNs"`
}

const (
	gcPausesMetric = "/gc/pauses:seconds"
	schedMetric    = "/sched/latencies:seconds"
	hiccupPeriod   = time.Millisecond
)

func startMeter() *meter {
	m := &meter{
		samples: []metrics.Sample{{Name: gcPausesMetric}, {Name: schedMetric}},
		hiccup:  newHist(),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
		start:   time.Now(),
	}
	metrics.Read(m.samples)
	m.gcBefore = cloneHist(m.samples[0].Value)
	m.schBefore = cloneHist(m.samples[1].Value)
	m.cpuBefore = cpuSeconds()
	// The hiccup goroutine sleeps for a millisecond at a time and records
	// how late it woke: a stall of the process or the machine (GC, CPU
	// starvation, a frozen VM) shows here whoever caused it.
	go func() {
		defer close(m.exited)
		t := time.NewTimer(hiccupPeriod)
		defer t.Stop()
		for {
			before := time.Now()
			select {
			case <-m.done:
				return
			case <-t.C:
			}
			recordClamped(m.hiccup, int64(time.Since(before)-hiccupPeriod))
			t.Reset(hiccupPeriod)
		}
	}()
	return m
}

func (m *meter) stop() {
	close(m.done)
	<-m.exited
	m.wallSeconds = time.Since(m.start).Seconds()
	m.cpuSeconds = cpuSeconds() - m.cpuBefore
	metrics.Read(m.samples)
	m.gc = pauseDelta(m.gcBefore, m.samples[0].Value)
	m.sched = pauseDelta(m.schBefore, m.samples[1].Value)
}

func cloneHist(v metrics.Value) *metrics.Float64Histogram {
	if v.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	h := v.Float64Histogram()
	return &metrics.Float64Histogram{
		Counts:  append([]uint64(nil), h.Counts...),
		Buckets: append([]float64(nil), h.Buckets...),
	}
}

// pauseDelta summarizes the counts added between two readings.
func pauseDelta(before *metrics.Float64Histogram, v metrics.Value) PauseStats {
	after := cloneHist(v)
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return PauseStats{}
	}
	var ps PauseStats
	delta := make([]int64, len(after.Counts))
	for i := range after.Counts {
		d := int64(after.Counts[i] - before.Counts[i])
		delta[i] = d
		ps.Count += d
		if d > 0 {
			ps.Max = bucketNs(after.Buckets[i+1], after.Buckets[i])
			ps.Total += d * bucketNs((after.Buckets[i]+after.Buckets[i+1])/2, after.Buckets[i])
		}
	}
	rank := int64(math.Ceil(0.99 * float64(ps.Count)))
	var seen int64
	for i, d := range delta {
		seen += d
		if d > 0 && seen >= rank {
			ps.P99 = bucketNs(after.Buckets[i+1], after.Buckets[i])
			break
		}
	}
	return ps
}

// bucketNs converts a bucket bound in seconds to nanoseconds, falling back
// to the lower bound when the upper one is infinite.
func bucketNs(sec, lower float64) int64 {
	if math.IsInf(sec, 0) || math.IsNaN(sec) {
		sec = lower
	}
	if math.IsInf(sec, 0) || math.IsNaN(sec) {
		return 0
	}
	return int64(sec * 1e9)
}

// cpuSeconds is the user plus system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
