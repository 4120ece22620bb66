package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// evaluated on the run's merged histograms.
	Thresholds []string `json:"thresholds,omitempty"`

	// Progress, if set, is called from the collector goroutine at the end of
	// every interval. It must return quickly.
	Progress func(IntervalStats) `json:"-"`
	// HDRLog, if set, receives an HdrHistogram interval log (format 1.3)
	// with the response, service and send_lag histograms of every interval.
	HDRLog io.Writer `json:"-"`
}

// TargetConfig selects the server, the model and the transport.
type TargetConfig struct {
	HTTP         string          `json:"http,omitempty"` // base URL, for the REST protocols
	GRPC         string          `json:"grpc,omitempty"` // host:port, for the gRPC protocols
	Protocol     client.Protocol `json:"protocol"`       // default http for --http, grpc-raw for --grpc
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
	// Connections is the number of gRPC connections or the HTTP keep-alive
	// pool size (default: 1 gRPC connection; an HTTP pool as large as the
	// concurrency or the in-flight limit, up to 1024). HTTP/1.1 carries one
	// request per connection, so REST requests beyond the pool wait for a
	// connection inside the client, and that wait counts as service time.
	Connections int `json:"connections,omitempty"`
	// ReadyTimeout bounds the wait for server and model readiness (default 30s).
	ReadyTimeout Duration `json:"readyTimeout"`
}

// InputConfig says how request payloads are made.
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
	// Seed seeds random input data and Poisson arrivals (default 1).
	Seed uint64 `json:"seed"`
}

// LoadConfig is the load model.
type LoadConfig struct {
	// Concurrency runs a closed loop of that many workers sending back to
	// back. Exactly one of Concurrency and Rate is set.
	Concurrency int `json:"concurrency,omitempty"`
	// Rate runs an open loop with this rate profile (see [ParseRate]).
	Rate string `json:"rate,omitempty"`
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
	// Interval is the length of a reporting interval (default 1s).
	Interval Duration `json:"interval"`
}

// CheckConfig sets the generator self-checks.
type CheckConfig struct {
	// LagTolerance is the largest acceptable send-lag p99 of an open-loop
	// run (default 2ms; see doc.go for why not 1ms).
	LagTolerance Duration `json:"lagTolerance"`
	// RateTolerance is the largest acceptable shortfall of dispatched
	// requests against the schedule, as a fraction (default 0.01).
	RateTolerance float64 `json:"rateTolerance"`
}

// Defaults.
const (
	DefaultDuration      = 10 * time.Second
	DefaultInterval      = time.Second
	DefaultTimeout       = 10 * time.Second
	DefaultReadyTimeout  = 30 * time.Second
	DefaultMaxInFlight   = 10000
	DefaultLagTolerance  = 2 * time.Millisecond
	DefaultRateTolerance = 0.01
	DefaultStringLength  = 16
)

// ErrConfig marks an invalid configuration; the CLI maps it to exit code 1.
var ErrConfig = errors.New("invalid configuration")

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// Normalize fills defaults and checks the configuration. Errors wrap
// ErrConfig.
func (c *Config) Normalize() error {
	t := &c.Target
	switch {
	case t.HTTP != "" && t.GRPC != "":
		return configErr("give one of --http and --grpc")
	case t.HTTP == "" && t.GRPC == "":
		return configErr("give a target: --http URL or --grpc host:port")
	}
	if t.Protocol == "" {
		t.Protocol = client.ProtocolHTTP
		if t.GRPC != "" {
			t.Protocol = client.ProtocolGRPCRaw
		}
	}
	if _, err := client.ParseProtocol(string(t.Protocol)); err != nil {
		return configErr("%v", err)
	}
	if t.Protocol.IsGRPC() != (t.GRPC != "") {
		return configErr("protocol %s needs --%s", t.Protocol, map[bool]string{true: "grpc", false: "http"}[t.Protocol.IsGRPC()])
	}
	if t.Model == "" {
		return configErr("give a model: --model NAME")
	}
	if t.Timeout <= 0 {
		t.Timeout = Duration(DefaultTimeout)
	}
	if t.ReadyTimeout <= 0 {
		t.ReadyTimeout = Duration(DefaultReadyTimeout)
	}
	if t.Connections < 0 {
		return configErr("connections must be positive")
	}

	in := &c.Inputs
	switch in.Data {
	case "":
		in.Data = "random"
	case "random", "zero":
	default:
		return configErr("unknown --data %q (want random or zero)", in.Data)
	}
	if in.StringLength <= 0 {
		in.StringLength = DefaultStringLength
	}
	if in.Seed == 0 {
		in.Seed = 1
	}

	l := &c.Load
	switch {
	case l.Concurrency > 0 && l.Rate != "":
		return configErr("give one of --concurrency (closed loop) and --rate (open loop)")
	case l.Concurrency < 0:
		return configErr("concurrency must be positive")
	case l.Concurrency == 0 && l.Rate == "":
		l.Concurrency = 1
	}
	if l.Rate != "" {
		if _, err := ParseRate(l.Rate); err != nil {
			return configErr("%v", err)
		}
		if l.Arrival == "" {
			l.Arrival = ArrivalConstant
		}
		if _, err := ParseArrival(string(l.Arrival)); err != nil {
			return configErr("%v", err)
		}
		if l.MaxInFlight == 0 {
			l.MaxInFlight = DefaultMaxInFlight
		}
		if l.MaxInFlight < 0 {
			return configErr("max in-flight must be positive")
		}
	} else if l.Arrival != "" || l.MaxInFlight != 0 {
		return configErr("--arrival and --max-inflight apply to open-loop runs (--rate) only")
	}
	if l.Duration <= 0 {
		l.Duration = Duration(DefaultDuration)
	}
	if l.Interval <= 0 {
		l.Interval = Duration(DefaultInterval)
	}
	if l.Warmup < 0 || l.WarmupRequests < 0 {
		return configErr("warm-up must not be negative")
	}
	if l.Warmup > 0 && l.WarmupRequests > 0 {
		return configErr("give the warm-up as a duration or as a request count, not both")
	}

	ck := &c.Checks
	if ck.LagTolerance <= 0 {
		ck.LagTolerance = Duration(DefaultLagTolerance)
	}
	if ck.RateTolerance <= 0 {
		ck.RateTolerance = DefaultRateTolerance
	}
	for _, s := range c.Thresholds {
		if _, err := ParseThreshold(s); err != nil {
			return configErr("%v", err)
		}
	}
	return nil
}

// OpenLoop reports whether the configuration is an open-loop run.
func (c *Config) OpenLoop() bool { return c.Load.Rate != "" }

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
