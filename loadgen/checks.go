package loadgen

import (
	"fmt"
	"runtime"
	"time"
)

// Checks is the generator's verdict on itself. A generator-bound run
// measured the load generator, not the server: its numbers must not be
// published as a server result, and the CLI exits with code 4.
//
// An open-loop run is generator-bound when
//   - the dispatcher could not keep up with the schedule: fewer than
//     (1 − RateTolerance) of the requests due in the window were dispatched
//     (sent or deliberately dropped at the in-flight cap), or
//   - the send-lag p99 (actual send − intended start) exceeds LagTolerance,
//     and at least minLateSends requests were that late: with a few dozen
//     requests the p99 is the maximum, and one late wake-up of a quiet
//     dispatcher does not make a generator that cannot keep up.
//
// A closed loop has no schedule to fall behind, so it is never marked
// generator-bound; high generator CPU, GC pauses or hiccups are reported as
// warnings for both kinds of run.
type Checks struct {
	LagTolerance  Duration `json:"lagTolerance"`
	RateTolerance float64  `json:"rateTolerance"`
	// DispatchRatio is (sent + dropped) / scheduled; 1 for a closed loop.
	DispatchRatio float64 `json:"dispatchRatio"`
	SendLagP99    int64   `json:"sendLagP99Ns"`
	// LateSends counts requests sent later than LagTolerance.
	LateSends int64 `json:"lateSends,omitempty"`
	// GCPauses are Go stop-the-world pauses; SchedLatency is how long
	// goroutines waited to run (both from runtime/metrics).
	GCPauses     PauseStats `json:"gcPauses"`
	SchedLatency PauseStats `json:"schedLatency"`
	// Hiccup is how late a goroutine sleeping 1 ms at a time woke up.
	HiccupP99 int64 `json:"hiccupP99Ns"`
	HiccupMax int64 `json:"hiccupMaxNs"`
	// CPUSeconds is the generator process's user+system CPU time during
	// the measured window; CPUUtilization divides it by the wall time and
	// GOMAXPROCS.
	CPUSeconds     float64 `json:"cpuSeconds"`
	CPUUtilization float64 `json:"cpuUtilization"`
	GOMAXPROCS     int     `json:"gomaxprocs"`

	GeneratorBound bool     `json:"generatorBound"`
	Reasons        []string `json:"reasons,omitempty"`
	Warnings       []string `json:"warnings,omitempty"`
}

func (r *runner) checks(res *Result, m *meter) Checks {
	c := Checks{
		LagTolerance:  r.cfg.Checks.LagTolerance,
		RateTolerance: r.cfg.Checks.RateTolerance,
		DispatchRatio: 1,
		GCPauses:      m.gc,
		SchedLatency:  m.sched,
		HiccupP99:     quantile(m.hiccup, 99),
		HiccupMax:     maxOf(m.hiccup),
		CPUSeconds:    m.cpuSeconds,
		GOMAXPROCS:    runtime.GOMAXPROCS(0),
	}
	if m.wallSeconds > 0 {
		c.CPUUtilization = m.cpuSeconds / m.wallSeconds / float64(c.GOMAXPROCS)
	}
	if res.Histograms.SendLag != nil {
		c.SendLagP99 = int64(res.Histograms.SendLag.Quantile(99))
		c.LateSends = res.Histograms.SendLag.countAbove(int64(c.LagTolerance))
	}
	if r.profile != nil && res.Counts.Scheduled > 0 {
		c.DispatchRatio = float64(res.Counts.Sent+res.Counts.Dropped) / float64(res.Counts.Scheduled)
	}
	c.evaluate(r.profile != nil)
	return c
}

// minLateSends is how many requests must be late before a send-lag p99
// above the tolerance marks the run generator-bound.
const minLateSends = 10

// evaluate sets GeneratorBound, Reasons and Warnings from the measurements.
func (c *Checks) evaluate(openLoop bool) {
	c.GeneratorBound, c.Reasons, c.Warnings = false, nil, nil
	tol := c.LagTolerance.D()
	if openLoop {
		if c.DispatchRatio < 1-c.RateTolerance {
			c.Reasons = append(c.Reasons, fmt.Sprintf("dispatched %.2f%% of the scheduled requests (tolerance %.2f%%)",
				100*c.DispatchRatio, 100*c.RateTolerance))
		}
		if lag := time.Duration(c.SendLagP99); lag > tol && c.LateSends >= minLateSends {
			c.Reasons = append(c.Reasons, fmt.Sprintf("send-lag p99 %v exceeds the tolerance %v (%d requests sent later than that)", lag, tol, c.LateSends))
		}
	}
	c.GeneratorBound = len(c.Reasons) > 0
	c.warn()
}

// warn sets Warnings from the measurements.
func (c *Checks) warn() {
	c.Warnings = nil
	tol := c.LagTolerance.D()
	if c.GCPauses.Max > int64(tol) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("a Go GC pause of up to %v", time.Duration(c.GCPauses.Max)))
	}
	if c.HiccupP99 > int64(tol) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("hiccup p99 %v: the generator process was stalled", time.Duration(c.HiccupP99)))
	}
	if c.CPUUtilization > 0.9 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("generator CPU at %.0f%% of %d cores", 100*c.CPUUtilization, c.GOMAXPROCS))
	}
}
