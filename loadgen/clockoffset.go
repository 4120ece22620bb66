package loadgen

import (
	"fmt"
	"time"
)

// ClockOffset is an estimate of how far the target's clock is from the
// generator's: the target's time is the local time plus Offset, within
// ±Precision. The segments of a test record one each, so that the merge
// can tell how far apart their clocks — and so their schedules — were.
type ClockOffset struct {
	Offset    Duration `json:"offset"`
	Precision Duration `json:"precision"`
	// Source is where the target's time came from, e.g. "HTTP Date header".
	Source string `json:"source,omitempty"`
	Probes int    `json:"probes"`
	// Error says why there is no estimate (then Offset and Precision are
	// meaningless).
	Error string `json:"error,omitempty"`
}

// String is "+1.234ms ± 0.2ms", or the error.
func (c ClockOffset) String() string {
	if c.Error != "" {
		return "no estimate: " + c.Error
	}
	sign := "+"
	if c.Offset < 0 {
		sign = ""
	}
	return fmt.Sprintf("%s%v ± %v (%s, %d probes)", sign, c.Offset.D().Round(time.Microsecond), c.Precision.D().Round(time.Microsecond), c.Source, c.Probes)
}
