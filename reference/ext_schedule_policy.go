package reference

import (
	"context"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
)

// The schedule_policy extension (Triton's): the request parameters priority
// (0 the default, 1 the highest) and timeout (microseconds). Every request
// runs on arrival unless its model has limited execution instances
// (instances.go), whose queue is first come first served: priority is
// checked and reorders nothing (Triton too ignores it without priority
// levels configured). timeout bounds the wait in that queue and, again, the
// model's run: a request still waiting or a model still running when it
// expires fails (504 over REST, DEADLINE_EXCEEDED over gRPC).

var extSchedulePolicy = extension{name: specs.ExtSchedulePolicy, advertised: true}

// maxRequestTimeout bounds timeout so that the conversion cannot overflow.
const maxRequestTimeout = 365 * 24 * time.Hour

// checkSchedule checks priority and timeout, when present: non-negative
// integers.
func checkSchedule(p oip.Parameters) error {
	for _, k := range []string{oip.ParamPriority, oip.ParamTimeout} {
		v, present := p[k]
		if !present {
			continue
		}
		if n, ok := p.Int(k); !ok || n < 0 {
			return invalidf("request parameter %q is %v; want an integer of at least 0", k, v)
		}
	}
	return nil
}

// scheduleContext bounds ctx by the request's timeout, when it has one.
func scheduleContext(ctx context.Context, p oip.Parameters) (context.Context, context.CancelFunc) {
	us, ok := p.Int(oip.ParamTimeout)
	if !ok || us <= 0 {
		return ctx, func() {}
	}
	d := min(time.Duration(min(us, int64(maxRequestTimeout/time.Microsecond)))*time.Microsecond, maxRequestTimeout)
	return context.WithTimeout(ctx, d)
}
