package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/oipkit/oipkit/client"
)

// Config is everything a run needs. It is echoed whole in the [Result], so
// a result says what was asked for. Zero fields mean the defaults listed
// with each; [Config.Normalize] fills them in.
type Config struct {
	Target TargetConfig `json:"target"`
	Inputs InputConfig  `json:"inputs"`
	Load   LoadConfig   `json:"load"`
	Checks CheckConfig  `json:"checks"`
	// Thresholds are CI gates such as "p99<20ms" (see [ParseThreshold]),
	// evaluated on the run's merged histograms (on each level of a sweep).
	// Unless one of them bounds error_rate, errors or timeouts, the
	// default failed-request bound Checks.MaxErrorRate applies too.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// AbortOnFail evaluates the thresholds during the run, at the end of
	// every interval once 5 have passed, and ends the run (and a sweep)
	// at the first failure, as k6's abortOnFail does.
	AbortOnFail bool `json:"abortOnFail,omitempty"`
	// Percentile is the latency percentile that the stability rule, the
	// sweep tables and the knee use (default 99), like perf_analyzer's
	// percentile option.
	Percentile float64 `json:"percentile,omitempty"`
	// SLO turns the run into a search for the highest load that holds
	// every one of these thresholds (package loadgen/search runs it).
	SLO []Threshold `json:"slo,omitempty"`
	// SLOResolution is the search's relative resolution (default 0.05):
	// it stops when the lowest failing level is within this fraction of
	// the highest holding one.
	SLOResolution float64 `json:"sloResolution,omitempty"`
	// Pacer, if set, paces an open-loop run instead of Load.Rate and
	// Load.Arrival (see [Pacer]); it is not recorded in the result.
	Pacer Pacer `json:"-"`
	// Streaming makes every request a stream of responses (see
	// [StreamConfig]); nil: unary requests.
	Streaming *StreamConfig `json:"streaming,omitempty"`
	// Sequence sends the requests in sequences of a stateful model (see
	// [SequenceConfig]); nil: no sequences.
	Sequence *SequenceConfig `json:"sequence,omitempty"`

	// Progress, if set, is called from the collector goroutine at the end of
	// every interval. It must return quickly.
	Progress func(IntervalStats) `json:"-"`
	// StepDone, if set, is called after each level of a sweep and each
	// probe of an SLO search.
	StepDone func(Step) `json:"-"`
	// HDRLog, if set, receives an HdrHistogram interval log (format 1.3)
	// with the response, service and send_lag histograms of every interval.
	HDRLog io.Writer `json:"-"`
}

// TargetConfig selects the server, the model and the transport: settings
// of the OIP target (package loadgen/oiptarget, whose Normalize checks
// them), kept in Config as plain data so that a Result records them. The
// engine only describes and identifies a run by them.
type TargetConfig struct {
	// HTTP is the REST base URL; a bare host:port means http://host:port.
	HTTP string `json:"http,omitempty"`
	// GRPC is host:port, for the gRPC protocols.
	GRPC         string          `json:"grpc,omitempty"`
	Protocol     client.Protocol `json:"protocol"` // default http for Target.HTTP, grpc-raw for Target.GRPC
	Model        string          `json:"model"`
	ModelVersion string          `json:"modelVersion,omitempty"`
	// TLSFiles secures the connection: TLS, CA, Cert, Key, ServerName,
	// InsecureSkipVerify (recorded as file names).
	client.TLSFiles
	// Headers are "Key: Value" lines sent as HTTP headers or gRPC metadata.
	// Values are recorded in results as "Key: <redacted>" (they often hold
	// tokens).
	Headers []string `json:"headers,omitempty"`
	Host    string   `json:"host,omitempty"` // Host header / :authority override
	// Timeout bounds each request (default 10s).
	Timeout Duration `json:"timeout"`
	// MaxBodyBytes caps a REST response body, GRPCMaxMessageBytes a gRPC
	// response message (counting what decoding it costs) and
	// MaxHeaderBytes a response's header block; zero means the client's
	// defaults (64 MiB, MaxBodyBytes, 1 MiB). An answer beyond a cap fails
	// its request and is discarded while it is read, never buffered.
	MaxBodyBytes        int64 `json:"maxBodyBytes,omitempty"`
	GRPCMaxMessageBytes int64 `json:"grpcMaxMessageBytes,omitempty"`
	MaxHeaderBytes      int64 `json:"maxHeaderBytes,omitempty"`
	// MetricsURL is the server's Prometheus metrics (Target.MetricsURL, e.g.
	// http://host:8002/metrics for Triton): the server-side breakdown when
	// the statistics extension is absent, and the server's stream timings.
	MetricsURL string `json:"metricsURL,omitempty"`
	// Connections is the number of gRPC connections or the HTTP keep-alive
	// pool size (default: 1 gRPC connection; an HTTP pool as large as the
	// concurrency or the in-flight limit, up to 1024). HTTP/1.1 carries one
	// request per connection, so REST requests beyond the pool wait for a
	// connection inside the client, and that wait counts as service time.
	Connections int `json:"connections,omitempty"`
	// ReadyTimeout bounds the wait for server and model readiness (default 30s).
	ReadyTimeout Duration `json:"readyTimeout"`
	// ReadyProgress, if set, is called about every two seconds while the
	// target is not ready yet, with what it is waiting for.
	ReadyProgress func(waited time.Duration, why string) `json:"-"`
	// WaitForListener waits, within ReadyTimeout, for a target where
	// nothing listens yet (still starting) instead of failing at once; the
	// CLI sets it with a shared start time.
	WaitForListener bool `json:"-"`
}

// InputConfig says how request payloads are made: settings of the OIP
// target, kept here as plain data like [TargetConfig] (the engine reads
// only Seed, which also seeds Poisson arrivals).
type InputConfig struct {
	// File is a perf_analyzer-compatible input-data JSON file; when empty,
	// inputs are synthesized from the model metadata.
	File string `json:"file,omitempty"`
	// Data is "random" (default) or "zero" for synthesized inputs.
	Data string `json:"data,omitempty"`
	// Shapes give concrete dimensions for -1 dims: "INPUT0:1,16". Unlisted
	// variable dimensions are 1.
	Shapes []string `json:"shapes,omitempty"`
	// StringLength is the length of synthesized BYTES elements (default 16).
	StringLength int `json:"stringLength,omitempty"`
	// Parameters are request parameters "name=value" (numbers, true/false
	// or strings), e.g. delay_ms=10.
	Parameters []string `json:"parameters,omitempty"`
	// Validate checks every response against the expected outputs.
	Validate bool `json:"validate,omitempty"`
	// CheckEvery decodes the first answer and then every CheckEvery-th in
	// full and checks it against the model's metadata (the OIP target's
	// sample.go); nil means oiptarget.DefaultCheckEvery, 0 checks only
	// every answer's framing and status. Validate checks every answer.
	CheckEvery *int `json:"checkEvery,omitempty"`
	// Seed seeds random input data and Poisson arrivals (default 1).
	Seed uint64 `json:"seed"`
	// SharedMemory is perf_analyzer's shared-memory option: "none" (default) or
	// "system" (inputs placed once in registered POSIX shared memory
	// regions, requests naming them, outputs written to regions; the
	// server must run on this host). "cuda" is not supported.
	SharedMemory string `json:"sharedMemory,omitempty"`
	// OutputSharedMemorySize is the bytes of region given to each output
	// with SharedMemory system (default 100 KiB, as perf_analyzer).
	OutputSharedMemorySize int `json:"outputSharedMemorySize,omitempty"`
}

// LoadConfig is the load model.
type LoadConfig struct {
	// Concurrency runs a closed loop of that many workers sending back to
	// back. Exactly one of Concurrency and Rate is set.
	Concurrency int `json:"concurrency,omitempty"`
	// Rate runs an open loop with this rate profile (see [ParseRate]).
	Rate RateProfile `json:"rate,omitzero"`
	// Arrival is constant (default) or poisson.
	Arrival Arrival `json:"arrival,omitempty"`
	// MaxInFlight caps open-loop requests in flight; a request due while
	// the cap is reached is dropped and counted (default 10000).
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// Duration is the measured part of the run (default 10s).
	Duration Duration `json:"duration"`
	// Warmup runs the same load for this long before measuring; or
	// WarmupRequests sends that many requests first. Neither is recorded.
	Warmup         Duration `json:"warmup,omitempty"`
	WarmupRequests int64    `json:"warmupRequests,omitempty"`
	// Interval is the length of a reporting interval (default 1s); it is
	// also the window of the stability rule.
	Interval Duration `json:"interval"`
	// Requests ends the measured window after this many requests (like
	// hey's and ghz's -n); without a Duration there is then no time limit.
	Requests int64 `json:"requests,omitempty"`
	// Stability measures until the estimates are stable (see [Stability])
	// instead of for Duration; Duration is then its MaxDuration.
	Stability *StabilityConfig `json:"stability,omitempty"`
	// ConcurrencyRange or RateRange makes the run a sweep: each level of
	// "START:END[:STEP]" (STEP a number, or xF for a factor) is measured
	// on its own (package loadgen/search runs it). With SLO they bound the
	// search instead.
	ConcurrencyRange Levels `json:"concurrencyRange,omitzero"`
	RateRange        Levels `json:"rateRange,omitzero"`
	// Segment makes the run one segment of a test split over several
	// generator processes (see [Segment] for the split rules); nil: the
	// whole test. Concurrency, Rate and Requests stay the whole test's.
	Segment *Segment `json:"segment,omitempty"`
	// StartAt is the absolute time the run starts at, once the target is
	// ready: the segments of a test share it, so that their schedules and
	// intervals line up (on clocks kept in step, e.g. by NTP). A warm-up
	// runs from StartAt and the measurement from StartAt + Warmup. Zero:
	// as soon as the target is ready.
	StartAt time.Time `json:"startAt,omitzero"`
}

// CheckConfig sets the generator self-checks.
type CheckConfig struct {
	// LagTolerance is the largest acceptable send-lag p99 of an open-loop
	// run (default 2ms; see doc.go for why not 1ms).
	LagTolerance Duration `json:"lagTolerance"`
	// RateTolerance is the largest acceptable shortfall of dispatched
	// requests against the schedule, as a fraction (default 0.01).
	RateTolerance float64 `json:"rateTolerance"`
	// MaxErrorRate is the default bound on failed requests (errors and
	// timeouts over completed), a fraction (default 0.01): a run above it
	// fails unless a threshold on error_rate, errors or timeouts replaces
	// it. 1 turns it off.
	MaxErrorRate *float64 `json:"maxErrorRate,omitempty"`
}

// Defaults.
const (
	DefaultDuration      = 10 * time.Second
	DefaultInterval      = time.Second
	DefaultMaxInFlight   = 10000
	DefaultLagTolerance  = 2 * time.Millisecond
	DefaultRateTolerance = 0.01
	DefaultMaxErrorRate  = 0.01
	DefaultPercentile    = 99
	DefaultSLOResolution = 0.05
	// MaxLevels bounds a sweep.
	MaxLevels = 100
)

// ErrConfig marks an invalid configuration; the CLI maps it to exit code 1.
var ErrConfig = errors.New("invalid configuration")

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// Normalize fills defaults and checks the configuration; it can be called
// again on its own output. Errors wrap ErrConfig and say which setting is
// wrong in one line.
func (c *Config) Normalize() error {
	if err := c.normalizeStreaming(); err != nil {
		return err
	}
	if c.Pacer != nil {
		l := c.Load
		if !l.Rate.IsZero() || l.Arrival != "" || l.Concurrency > 0 || !l.ConcurrencyRange.IsZero() || !l.RateRange.IsZero() || c.SLO != nil {
			return configErr("Config.Pacer paces the run: give no Load.Rate, Load.Arrival, Load.Concurrency, range nor Config.SLO")
		}
	}
	if err := c.Load.normalize(c.SLO != nil, c.Pacer != nil); err != nil {
		return err
	}

	ck := &c.Checks
	switch {
	case ck.LagTolerance < 0:
		return configErr("lag tolerance must be positive, got %v", ck.LagTolerance)
	case ck.LagTolerance == 0:
		ck.LagTolerance = Duration(DefaultLagTolerance)
	}
	switch {
	case ck.RateTolerance < 0 || ck.RateTolerance >= 1:
		return configErr("rate tolerance must be a fraction in (0, 1), got %v", ck.RateTolerance)
	case ck.RateTolerance == 0:
		ck.RateTolerance = DefaultRateTolerance
	}
	if ck.MaxErrorRate == nil {
		v := DefaultMaxErrorRate
		ck.MaxErrorRate = &v
	} else if v := *ck.MaxErrorRate; !(v >= 0 && v <= 1) {
		return configErr("max error rate must be a fraction in [0, 1] (or a percentage), got %v", v)
	}
	switch {
	case c.Percentile == 0:
		c.Percentile = DefaultPercentile
	case !(c.Percentile > 0 && c.Percentile < 100):
		return configErr("percentile must be in (0, 100), got %v", c.Percentile)
	}
	for _, t := range append(append([]Threshold(nil), c.Thresholds...), c.SLO...) {
		if t.op == "" {
			return configErr("threshold %q was not made by ParseThreshold", t.Text)
		}
	}
	if c.SLO != nil {
		if len(c.SLO) == 0 {
			return configErr("an SLO search needs at least one Config.SLO, e.g. p99<50ms")
		}
		switch {
		case c.SLOResolution == 0:
			c.SLOResolution = DefaultSLOResolution
		case !(c.SLOResolution > 0 && c.SLOResolution < 1):
			return configErr("SLO resolution must be a fraction in (0, 1), got %v", c.SLOResolution)
		}
	} else if c.SLOResolution != 0 {
		return configErr("Config.SLOResolution needs Config.SLO")
	}
	if err := c.normalizeSequences(); err != nil {
		return err
	}
	return c.checkSegment()
}

// checkSegment refuses what a segment cannot do on its own share of a
// test: anything that decides from the figures while the test runs (each
// segment would decide differently), gates (they hold for the merged
// result), and splits that leave a segment nothing to send.
func (c *Config) checkSegment() error {
	l := c.Load
	if l.Segment == nil {
		return nil
	}
	seg := *l.Segment
	if err := seg.check(); err != nil {
		return configErr("%v", err)
	}
	switch {
	case c.SLO != nil:
		return configErr("Load.Segment %s: an SLO search picks each level from the previous probe's result, which no segment has alone; search with one generator, or run one segmented test per level", seg)
	case c.Sweep():
		return configErr("Load.Segment %s: a sweep's levels start one after another, each after the previous level's requests drained, so the segments' levels would drift apart; run one segmented test per level", seg)
	case l.Stability != nil:
		return configErr("Load.Segment %s: Load.Stability ends a measurement when its own figures settle, so each segment would end at a different time; give a Load.Duration", seg)
	case c.AbortOnFail:
		return configErr("Load.Segment %s: Config.AbortOnFail judges one segment's share of the test; gate the merged result with oipkit report Config.Thresholds", seg)
	case len(c.Thresholds) > 0:
		return configErr("Load.Segment %s: thresholds hold for the whole test; give them to oipkit report, which merges the segments and gates the merged result", seg)
	case l.Concurrency > 0 && l.Concurrency < seg.Count:
		return configErr("Load.Segment %s: concurrency %d leaves some of the %d segments without a worker", seg, l.Concurrency, seg.Count)
	case l.Requests > 0 && l.Requests < int64(seg.Count):
		return configErr("Load.Segment %s: %d requests leave some of the %d segments without a request", seg, l.Requests, seg.Count)
	case l.WarmupRequests > 0 && !l.StartAt.IsZero() && seg.Count > 1:
		return configErr("Load.Segment %s with Load.StartAt: a warm-up of %d requests ends at a different time in every segment, so their measurements would not line up; give the warm-up as a duration", seg, l.WarmupRequests)
	}
	return nil
}

func (l *LoadConfig) normalize(search, paced bool) error {
	ranges := 0
	if !l.ConcurrencyRange.IsZero() {
		ranges++
		for _, v := range l.ConcurrencyRange.Values() {
			if v != math.Trunc(v) {
				return configErr("Load.ConcurrencyRange: range %q: levels must be whole numbers", l.ConcurrencyRange)
			}
		}
	}
	if !l.RateRange.IsZero() {
		ranges++
	}
	switch {
	case ranges > 1:
		return configErr("give one of Load.ConcurrencyRange and Load.RateRange")
	case l.Concurrency > 0 && !l.Rate.IsZero():
		return configErr("give one of Load.Concurrency (closed loop) and Load.Rate (open loop)")
	case l.Concurrency < 0:
		return configErr("concurrency must be at least 1, got %d", l.Concurrency)
	case ranges > 0 && !search && (l.Concurrency > 0 || !l.Rate.IsZero()):
		return configErr("a sweep (Load.ConcurrencyRange, Load.RateRange) sets the load of each level: drop Load.Concurrency and Load.Rate")
	case search && !l.ConcurrencyRange.IsZero() && !l.Rate.IsZero(), search && !l.RateRange.IsZero() && l.Concurrency > 0:
		return configErr("an SLO search over a concurrency range starts from Load.Concurrency, over a rate range from Load.Rate")
	case l.Concurrency == 0 && l.Rate.IsZero() && ranges == 0 && !search && !paced:
		l.Concurrency = 1
	}
	if p := l.Rate; !p.IsZero() {
		if search && !p.constant() {
			return configErr("an SLO search starts from a constant Load.Rate, not %s", l.Rate)
		}
	}
	open := !l.Rate.IsZero() || !l.RateRange.IsZero() || (search && l.ConcurrencyRange.IsZero() && l.Concurrency == 0) || paced
	if open {
		if l.Arrival == "" && !paced {
			l.Arrival = ArrivalConstant
		}
		if _, err := ParseArrival(string(l.Arrival)); err != nil && !paced {
			return configErr("%v", err)
		}
		switch {
		case l.MaxInFlight < 0:
			return configErr("max in-flight must be at least 1, got %d", l.MaxInFlight)
		case l.MaxInFlight == 0:
			l.MaxInFlight = DefaultMaxInFlight
		}
	} else if l.Arrival != "" || l.MaxInFlight != 0 {
		return configErr("Load.Arrival and Load.MaxInFlight apply to open-loop runs (Load.Rate) only")
	}

	if l.Requests < 0 {
		return configErr("request count must be positive, got %d", l.Requests)
	}
	if l.Duration < 0 {
		return configErr("duration must be positive, got %v", l.Duration)
	}
	if st := l.Stability; st != nil {
		switch {
		case st.Tolerance == 0:
			st.Tolerance = DefaultStabilityTolerance
		case !(st.Tolerance > 0 && st.Tolerance < 1):
			return configErr("stability tolerance must be a fraction in (0, 1), got %v", st.Tolerance)
		}
		switch {
		case st.MaxDuration < 0:
			return configErr("Load.Stability.MaxDuration must be positive, got %v", st.MaxDuration)
		case st.MaxDuration == 0:
			st.MaxDuration = Duration(DefaultStabilityMax)
		}
		if l.Duration != 0 && l.Duration != st.MaxDuration {
			return configErr("with Load.Stability the measurement lasts until stable: give its cap as Load.Stability.MaxDuration, not Load.Duration")
		}
		if l.Requests > 0 {
			return configErr("give one of Load.Stability and a request count (Load.Requests)")
		}
		if !l.Rate.IsZero() {
			if !l.Rate.constant() {
				return configErr("Load.Stability needs a steady load (Load.Concurrency or a constant Load.Rate), not %s", l.Rate)
			}
		}
		l.Duration = st.MaxDuration
	}
	if l.Duration == 0 && l.Requests == 0 {
		l.Duration = Duration(DefaultDuration)
	}
	switch {
	case l.Interval < 0:
		return configErr("interval must be positive, got %v", l.Interval)
	case l.Interval == 0:
		l.Interval = Duration(DefaultInterval)
	}
	if l.Warmup < 0 || l.WarmupRequests < 0 {
		return configErr("warm-up must not be negative")
	}
	if l.Warmup > 0 && l.WarmupRequests > 0 {
		return configErr("give the warm-up as a duration or as a request count, not both")
	}
	return nil
}

// Gates are the thresholds a run is judged by: Thresholds, and the
// default failed-request bound unless a threshold bounds failures itself.
func (c *Config) Gates() []Threshold {
	g := append([]Threshold(nil), c.Thresholds...)
	for _, t := range c.Thresholds {
		if t.boundsFailures() {
			return g
		}
	}
	max := DefaultMaxErrorRate
	if c.Checks.MaxErrorRate != nil {
		max = *c.Checks.MaxErrorRate
	}
	if max >= 1 {
		return g
	}
	return append(g, defaultErrorGate(max))
}

// defaultErrorGate is the threshold form of the default failed-request
// bound.
func defaultErrorGate(max float64) Threshold {
	t, err := ParseThreshold("error_rate<=" + strconv.FormatFloat(100*max, 'g', -1, 64) + "%")
	if err != nil { // cannot happen: max is a fraction
		return Threshold{}
	}
	return t
}

// pacer is an open-loop run's pacing: Config.Pacer, else Load.Rate with
// Load.Arrival (Poisson seeded with Inputs.Seed).
func (c *Config) pacer() Pacer {
	if c.Pacer != nil {
		return c.Pacer
	}
	p := c.Load.Rate
	if c.Load.Arrival == ArrivalPoisson {
		return Poisson{Profile: p, Seed: c.Inputs.Seed}
	}
	return p
}

// Sweep reports whether the configuration is a sweep.
func (c *Config) Sweep() bool {
	return c.SLO == nil && (!c.Load.ConcurrencyRange.IsZero() || !c.Load.RateRange.IsZero())
}

// OpenLoop reports whether the configuration is an open-loop run (or rate
// sweep, or rate search).
func (c *Config) OpenLoop() bool {
	l := c.Load
	return !l.Rate.IsZero() || !l.RateRange.IsZero() || (c.SLO != nil && l.Concurrency == 0 && l.ConcurrencyRange.IsZero()) || c.Pacer != nil
}

// Duration is a time.Duration written in JSON as a Go duration string
// ("1.5s"); it also reads a number of nanoseconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("duration: want a string like \"1.5s\" or nanoseconds, got %s", b)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}
