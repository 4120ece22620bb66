package conformance

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/specs"
)

// Feature is an optional capability a spec needs beyond the core protocol:
// an extension name of the vocabulary in package specs.
type Feature = specs.Extension

// Features is the closed feature vocabulary.
var Features = specs.Extensions

// ParseFeature returns the feature named s.
func ParseFeature(s string) (Feature, error) { return specs.ParseExtension(s) }

// Transport is the protocol a spec speaks.
type Transport = specs.Transport

// The transports.
const (
	TransportREST = specs.TransportREST
	TransportGRPC = specs.TransportGRPC
)

// Options configure a conformance run. The CLI fills them from flags and the
// go test wrapper from environment variables ([OptionsFromEnv]); zero values
// mean the defaults.
type Options struct {
	// HTTPURL is the REST base URL, e.g. "http://127.0.0.1:8000". Empty
	// means REST is not tested.
	HTTPURL string
	// GRPCAddr is the gRPC "host:port". Empty means gRPC is not tested.
	GRPCAddr string
	// Features, when non-nil, overrides the features discovered from the
	// server's advertised extensions.
	Features []Feature
	// DeclaredFixtures are fixture models taken as deployed without
	// discovering them, for servers whose models answer no metadata or
	// readiness call (TorchServe): their inputs and outputs are the fixture
	// contract's, and the specs that need them run.
	DeclaredFixtures []string
	// Header is sent with every HTTP request and as gRPC metadata.
	Header http.Header
	// Host overrides the HTTP Host header and the gRPC :authority.
	Host string
	// TLS secures the connections: gRPC uses TLS exactly when it is set,
	// REST when the URL is https:// (with the system's roots when it is
	// nil). client.TLSFiles builds it from PEM files.
	TLS *tls.Config
	// Timeout bounds each call (default 10s).
	Timeout time.Duration
	// Strict fails the verdict on lenient and warning findings too.
	Strict bool
	// MaxResponseBytes caps each REST response body (default 4 MiB), and
	// MaxMessageBytes each gRPC message, counting what decoding it costs
	// (default MaxResponseBytes). The suite's own tensors are small (61×71
	// at most); the caps bound what a server can make the run hold. Specs
	// run one after another, but one keeps up to four answers at once: at
	// 4 MiB a run stays under 100 MB whatever the server sends (16 MiB
	// took it to 112 MB against an endless body, 8 MiB to 93 MB against
	// 7 MB answers; cmd/oipkit memory_test.go).
	MaxResponseBytes int64
	MaxMessageBytes  int64
	// MaxHeaderBytes caps a response's header block (default 1 MiB).
	MaxHeaderBytes int64
	// ReportDir receives report.json, report.md, report.html and
	// junit.xml; empty means no files are written (the report is still
	// returned).
	ReportDir string
	// StepSummary is a file the Markdown step summary is appended to (what
	// GitHub Actions names in GITHUB_STEP_SUMMARY); empty means none.
	StepSummary string
	// Profiles selects the profiles whose verdicts decide the exit code;
	// empty means every profile whose transport is targeted.
	Profiles []string
	// ImplementationName names the server in the report; empty means the
	// name from server metadata.
	ImplementationName string
	// LabelFilter is an extra ginkgo label filter ANDed with the one
	// derived from features and transports.
	LabelFilter string
	// Verbose keeps ginkgo's own stream, every spec as it runs and each
	// failure in full; without it ginkgo prints nothing, and Progress says
	// how far the run is.
	Verbose bool
	// Progress receives a line when the specs start and one when they
	// end (on a terminal, a count kept up to date in between); nil for
	// none.
	Progress io.Writer
}

// Defaults for zero Options fields.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 4 << 20
)

func (o Options) normalize() (Options, error) {
	if o.HTTPURL == "" && o.GRPCAddr == "" {
		return o, fmt.Errorf("no target: set an HTTP URL, a gRPC address or both")
	}
	if o.HTTPURL != "" && !strings.Contains(o.HTTPURL, "://") {
		o.HTTPURL = "http://" + o.HTTPURL
	}
	o.HTTPURL = strings.TrimRight(o.HTTPURL, "/")
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	o.Header = o.Header.Clone()
	if err := checkFixtureNames(o.DeclaredFixtures); err != nil {
		return o, err
	}
	for _, name := range o.Profiles {
		if _, err := findProfile(name); err != nil {
			return o, err
		}
	}
	return o, nil
}

// transports lists the targeted transports.
func (o Options) transports() []Transport {
	var ts []Transport
	if o.HTTPURL != "" {
		ts = append(ts, TransportREST)
	}
	if o.GRPCAddr != "" {
		ts = append(ts, TransportGRPC)
	}
	return ts
}

// engineConfig is what the engine needs of the options.
func (o Options) engineConfig() engine.Config {
	return engine.Config{
		HTTPURL: o.HTTPURL, GRPCAddr: o.GRPCAddr, Header: o.Header, Host: o.Host, TLS: o.TLS,
		Timeout: o.Timeout, MaxResponseBytes: o.MaxResponseBytes, MaxMessageBytes: o.MaxMessageBytes,
		MaxHeaderBytes: o.MaxHeaderBytes, Features: o.Features, DeclaredFixtures: o.DeclaredFixtures,
		Strict: o.Strict, ImplementationName: o.ImplementationName,
	}
}

// Environment variables read by [OptionsFromEnv].
const (
	EnvHTTP      = "OIPKIT_HTTP"       // REST base URL
	EnvGRPC      = "OIPKIT_GRPC"       // gRPC host:port
	EnvFeatures  = "OIPKIT_FEATURES"   // comma-separated feature override
	EnvHeaders   = "OIPKIT_HEADERS"    // newline- or ';'-separated "K: V" headers
	EnvStrict    = "OIPKIT_STRICT"     // "1"/"true" for strict grading
	EnvReportDir = "OIPKIT_REPORT_DIR" // report directory
	EnvTimeout   = "OIPKIT_TIMEOUT"    // per-call timeout, e.g. "10s"
	EnvProfiles  = "OIPKIT_PROFILES"   // comma-separated profile names
	// EnvStepSummary is the file GitHub Actions appends step summaries to.
	EnvStepSummary = "GITHUB_STEP_SUMMARY"
)

// OptionsFromEnv builds Options from the OIPKIT_* environment variables, for
// `go test ./conformance/`. ok is false when neither target is set.
func OptionsFromEnv() (opts Options, ok bool, err error) {
	opts.HTTPURL = os.Getenv(EnvHTTP)
	opts.GRPCAddr = os.Getenv(EnvGRPC)
	if opts.HTTPURL == "" && opts.GRPCAddr == "" {
		return opts, false, nil
	}
	if v := os.Getenv(EnvFeatures); v != "" {
		if opts.Features, err = ParseFeatures(v); err != nil {
			return opts, true, fmt.Errorf("%s: %w", EnvFeatures, err)
		}
	}
	if v := os.Getenv(EnvHeaders); v != "" {
		lines := strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == ';' })
		if opts.Header, err = client.ParseHeaders(lines); err != nil {
			return opts, true, fmt.Errorf("%s: %w", EnvHeaders, err)
		}
	}
	if v := os.Getenv(EnvStrict); v != "" {
		if opts.Strict, err = strconv.ParseBool(v); err != nil {
			return opts, true, fmt.Errorf("%s: %w", EnvStrict, err)
		}
	}
	if v := os.Getenv(EnvTimeout); v != "" {
		if opts.Timeout, err = time.ParseDuration(v); err != nil {
			return opts, true, fmt.Errorf("%s: %w", EnvTimeout, err)
		}
	}
	if v := os.Getenv(EnvProfiles); v != "" {
		opts.Profiles = splitList(v)
	}
	opts.ReportDir = os.Getenv(EnvReportDir)
	opts.StepSummary = os.Getenv(EnvStepSummary)
	return opts, true, nil
}

// ParseFeatures parses a comma-separated feature list. The empty string is
// an explicit empty set (no features), which differs from a nil override.
func ParseFeatures(s string) ([]Feature, error) {
	fs := []Feature{}
	for _, name := range splitList(s) {
		f, err := ParseFeature(name)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// ParseFixtures parses a comma-separated list of fixture model names, each
// a fixture of the contract (specs/fixtures.yaml).
func ParseFixtures(s string) ([]string, error) {
	names := splitList(s)
	return names, checkFixtureNames(names)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkFixtureNames fails on a name that is not a fixture of the contract
// (specs/fixtures.yaml).
func checkFixtureNames(names []string) error {
	if len(names) == 0 {
		return nil
	}
	fixtures, err := specs.LoadFixtures()
	if err != nil {
		return err
	}
	known := map[string]bool{}
	var all []string
	for _, f := range fixtures {
		known[f.Name] = true
		all = append(all, f.Name)
	}
	for _, n := range names {
		if !known[n] {
			return fmt.Errorf("declared fixture %q is not a fixture model of the contract (%s)", n, strings.Join(all, ", "))
		}
	}
	return nil
}
