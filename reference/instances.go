package reference

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Execution instances, as Triton's instance_group sets them: a model with N
// instances runs at most N executions at once, and the requests beyond them
// wait in the model's queue, first come first served. The wait is the
// queue time of the statistics extension. By default a model has no
// instance limit (every request runs on arrival, on its handler's
// goroutine); a limit is set for the server's life by Config.Instances
// (`oipkit serve --instances delay=1`) or, for one load of a model, by the
// instance_group of a configuration override in the model repository
// extension's load call ({"instance_group": [{"count": 1}]}). Every version
// of a model shares its instances (Triton gives each version its own). The
// gate is taken wherever a model runs: inference over REST and gRPC, each
// request of a ModelStreamInfer stream (a decoupled model holds its
// instance until its last response), and generate (whose wait counts as
// compute time: it records no queue time).
//
// A request's schedule_policy timeout bounds its wait in the queue; a
// request that times out there fails as one whose run timed out. The queue
// itself is not bounded (Triton's default max_queue_size of 0): what
// bounds it are the server's limits on connections and streams. Priority
// does not reorder the queue (Triton honours it only with priority levels
// configured, which this server does not have).

// maxInstances bounds a model's instance count (a typo such as 10000000
// would otherwise be taken literally).
const maxInstances = 1 << 16

// instanceGroups holds the instance limit of every model that has one. The
// map is replaced, never changed, so the request path reads it with one
// atomic load and, when no model is limited, nothing else.
type instanceGroups struct {
	mu       sync.Mutex // serializes the writers
	defaults map[string]int
	gates    atomic.Pointer[map[string]*instanceGate]
}

// newInstanceGroups limits the models named in counts.
func newInstanceGroups(counts map[string]int) *instanceGroups {
	g := &instanceGroups{defaults: map[string]int{}}
	for name, n := range counts {
		g.defaults[name] = n
		g.set(name, n)
	}
	return g
}

// set gives model name n instances (0: unlimited). Requests already waiting
// or running keep the gate they entered.
func (g *instanceGroups) set(name string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	next := map[string]*instanceGate{}
	if old := g.gates.Load(); old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	delete(next, name)
	if n > 0 {
		next[name] = &instanceGate{model: name, slots: make(chan struct{}, n)}
	}
	if len(next) == 0 {
		g.gates.Store(nil)
		return
	}
	g.gates.Store(&next)
}

// reset gives name the instances the server was configured with.
func (g *instanceGroups) reset(name string) { g.set(name, g.defaults[name]) }

// count returns name's instance limit (0: unlimited).
func (g *instanceGroups) count(name string) int {
	if m := g.gates.Load(); m != nil {
		if gate := (*m)[name]; gate != nil {
			return cap(gate.slots)
		}
	}
	return 0
}

// enter waits for an instance of model name and returns its gate (nil when
// the model has no limit; leave it when the execution is done) and how long
// the request waited. The wait ends early, with an error, when ctx ends or
// the request's schedule_policy timeout expires.
func (g *instanceGroups) enter(ctx context.Context, name string, params oip.Parameters) (*instanceGate, time.Duration, error) {
	m := g.gates.Load()
	if m == nil {
		return nil, 0, nil
	}
	gate := (*m)[name]
	if gate == nil {
		return nil, 0, nil
	}
	select {
	case gate.slots <- struct{}{}: // an instance is free: no wait
		return gate, 0, nil
	default:
	}
	start := time.Now()
	ctx, cancel := scheduleContext(ctx, params)
	defer cancel()
	select {
	case gate.slots <- struct{}{}: // blocked senders are served in order: FIFO
		return gate, time.Since(start), nil
	case <-ctx.Done():
		waited := time.Since(start)
		err := ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("model %q: the request's timeout expired after %v in the queue for one of the model's %d instances: %w",
				name, waited.Round(time.Microsecond), cap(gate.slots), err)
		}
		return nil, waited, err
	}
}

// instanceGate is the instances of one model: a slot taken per execution.
type instanceGate struct {
	model string
	slots chan struct{}
}

// leave frees the instance taken by enter; a nil gate has nothing to free.
func (gate *instanceGate) leave() {
	if gate != nil {
		<-gate.slots
	}
}

// ParseInstances reads a list of model instance counts,
// "MODEL=COUNT[,MODEL=COUNT…]", as `oipkit serve --instances` takes it.
func ParseInstances(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, count, ok := strings.Cut(item, "=")
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if !ok || strings.TrimSpace(name) == "" || err != nil || n < 1 || n > maxInstances {
			return nil, fmt.Errorf("%q: want MODEL=COUNT with a COUNT from 1 to %d", item, maxInstances)
		}
		out[strings.TrimSpace(name)] = n
	}
	return out, nil
}

// checkInstances checks that every model given instances is in the
// repository.
func checkInstances(counts map[string]int, names []string) error {
	var unknown []string
	for name, n := range counts {
		if n < 1 || n > maxInstances {
			return fmt.Errorf("instances of model %q: %d; want 1 to %d", name, n, maxInstances)
		}
		if !slices.Contains(names, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("instances: no model %s in the repository", strings.Join(unknown, ", "))
	}
	return nil
}

// configInstances reads the instance_group of a configuration override:
// the total count of its groups (a group's count of 0 means 1, as in
// Triton), or 0 when it has none.
func configInstances(name, config string) (int, error) {
	if config == "" {
		return 0, nil
	}
	var cfg inferencepb.ModelConfig
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(config), &cfg); err != nil {
		return 0, invalidf("load model %q: parameter \"config\" is not a JSON model configuration: %v", name, err)
	}
	total := 0
	for i, g := range cfg.GetInstanceGroup() {
		switch n := g.GetCount(); {
		case n < 0:
			return 0, invalidf("load model %q: the configuration's instance_group[%d].count is %d; want at least 1", name, i, n)
		case n == 0:
			total++
		default:
			total += int(n)
		}
		if total > maxInstances {
			return 0, invalidf("load model %q: the configuration's instance_group counts add up to more than %d", name, maxInstances)
		}
	}
	return total, nil
}
