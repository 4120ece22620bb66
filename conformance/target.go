package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// ErrUnreachable is returned by [Run] when a target does not answer at all.
var ErrUnreachable = errors.New("target unreachable")

// maxNoAnswer is how many consecutive calls may go unanswered before the run
// is aborted: a server that stopped answering would otherwise turn every
// remaining spec into a slow timeout.
const maxNoAnswer = 4

// target is the server under test as the specs see it during a run.
type target struct {
	opts Options
	rest *client.REST // nil when REST is not targeted
	grpc *client.GRPC // nil when gRPC is not targeted

	features      map[Feature]bool
	featureSource string
	advertised    []string // server metadata extensions, as sent
	implName      string
	implVersion   string
	problems      []string // discovery problems worth printing

	liveREST int  // status of GET /v2/health/live before the run
	liveGRPC bool // ServerLive answered OK with live=true before the run

	mu       sync.Mutex
	fixtures map[string]bool // fixture name → deployed
	versions bool            // the versioned fixture's metadata lists versions
	// versioning: some fixture's metadata lists versions. A server that
	// versions nothing cannot deploy the versioned fixture.
	versioning bool
	noAnswer   int
	lastMiss   string
}

// tgt is the target of the current run; nil while the tree is only previewed.
var tgt *target

// connect builds the clients, checks that every target answers, and
// discovers features and the implementation's name.
func connect(ctx context.Context, opts Options) (*target, error) {
	t := &target{opts: opts, features: map[Feature]bool{}, fixtures: map[string]bool{}}
	copts := client.Options{
		Timeout: opts.Timeout, Header: opts.Header, Host: opts.Host,
		MaxResponseBytes: opts.MaxResponseBytes,
	}
	probe := min(opts.Timeout, 3*time.Second)
	if opts.HTTPURL != "" {
		u, err := url.Parse(opts.HTTPURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("HTTP target %q: not a URL", opts.HTTPURL)
		}
		if err := dialCheck(ctx, hostPort(u), probe); err != nil {
			return nil, fmt.Errorf("%w: HTTP target %s: %v", ErrUnreachable, opts.HTTPURL, err)
		}
		if t.rest, err = client.NewREST(opts.HTTPURL, false, copts); err != nil {
			return nil, fmt.Errorf("HTTP client: %w", err)
		}
		pctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		resp, err := t.rest.Do(pctx, http.MethodGet, "/v2/health/live", nil, nil)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w: HTTP target %s: GET /v2/health/live: %v", ErrUnreachable, opts.HTTPURL, err)
		}
		t.liveREST = resp.Status
	}
	if opts.GRPCAddr != "" {
		if err := dialCheck(ctx, opts.GRPCAddr, probe); err != nil {
			return nil, fmt.Errorf("%w: gRPC target %s: %v", ErrUnreachable, opts.GRPCAddr, err)
		}
		var err error
		if t.grpc, err = client.NewGRPC(opts.GRPCAddr, false, copts); err != nil {
			return nil, fmt.Errorf("gRPC client: %w", err)
		}
		cctx, cancel := t.grpc.Context(ctx)
		live, err := t.grpc.Stub().ServerLive(cctx, &inferencepb.ServerLiveRequest{})
		cancel()
		if grpcNoAnswer(err) != nil {
			return nil, fmt.Errorf("%w: gRPC target %s: ServerLive: %v", ErrUnreachable, opts.GRPCAddr, err)
		}
		t.liveGRPC = err == nil && live.GetLive()
	}
	t.discover(ctx)
	return t, nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// dialCheck opens and closes one TCP connection, so that a target where
// nothing listens fails in milliseconds with the operating system's reason.
func dialCheck(ctx context.Context, addr string, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// discover reads server metadata once, for the implementation's name and
// version and, unless the features were given, the advertised extensions.
func (t *target) discover(ctx context.Context) {
	var name, ver string
	var exts []string
	var err error
	if t.rest != nil {
		name, ver, exts, err = t.restServerMetadata(ctx)
		if err != nil {
			t.problems = append(t.problems, "REST server metadata: "+err.Error())
		}
	}
	// gRPC when REST is not targeted, or when its metadata is unusable (the
	// REST specs report that): the features must not vanish with it.
	if t.grpc != nil && (t.rest == nil || err != nil) {
		name, ver, exts, err = t.grpcServerMetadata(ctx)
		if err != nil {
			t.problems = append(t.problems, "gRPC server metadata: "+err.Error())
		}
	}
	t.implName, t.implVersion, t.advertised = name, ver, exts
	if t.opts.ImplementationName != "" {
		t.implName = t.opts.ImplementationName
	}
	if t.implName == "" {
		t.implName = "unknown"
	}
	if t.opts.Features != nil {
		t.featureSource = "flag"
		for _, f := range t.opts.Features {
			t.features[f] = true
		}
		return
	}
	t.featureSource = "advertised"
	for _, e := range exts {
		if slices.Contains(Features, Feature(e)) {
			t.features[Feature(e)] = true
		}
	}
}

func (t *target) restServerMetadata(ctx context.Context) (name, ver string, exts []string, err error) {
	cctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	resp, err := t.rest.Do(cctx, http.MethodGet, "/v2", nil, nil)
	if err != nil {
		return "", "", nil, err
	}
	if resp.Status != http.StatusOK {
		return "", "", nil, fmt.Errorf("GET /v2: status %d", resp.Status)
	}
	var m struct {
		Name       string   `json:"name"`
		Version    string   `json:"version"`
		Extensions []string `json:"extensions"`
	}
	if err := json.Unmarshal(resp.Body, &m); err != nil {
		return "", "", nil, fmt.Errorf("GET /v2: %v", err)
	}
	return m.Name, m.Version, m.Extensions, nil
}

func (t *target) grpcServerMetadata(ctx context.Context) (name, ver string, exts []string, err error) {
	cctx, cancel := t.grpc.Context(ctx)
	defer cancel()
	m, err := t.grpc.Stub().ServerMetadata(cctx, &inferencepb.ServerMetadataRequest{})
	if err != nil {
		return "", "", nil, err
	}
	return m.GetName(), m.GetVersion(), m.GetExtensions(), nil
}

// featureList returns the supported features, sorted.
func (t *target) featureList() []Feature {
	var fs []Feature
	for f := range t.features {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i] < fs[j] })
	return fs
}

// discoverFixtures asks the server, over every targeted transport, for the
// metadata and readiness of each fixture model the suite may use. A fixture
// counts as deployed when any probe finds it.
func (t *target) discoverFixtures(ctx context.Context) error {
	fixtures, err := specs.LoadFixtures()
	if err != nil {
		return err
	}
	// Probe the fixtures a few at a time: a server that hangs on model
	// metadata costs one timeout per batch, not one per fixture.
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, f := range fixtures {
		switch {
		case f.Kind == specs.KindCore:
		case f.Kind == specs.KindExtension && t.features[Feature(f.Extension)]:
		default:
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(name string) {
			defer func() { <-sem; wg.Done() }()
			deployed := t.deployed(ctx, name)
			t.mu.Lock()
			t.fixtures[name] = deployed
			t.mu.Unlock()
		}(f.Name)
	}
	wg.Wait()
	t.versions = t.fixtures["versioned"] && t.listsVersions(ctx, "versioned")
	t.versioning = t.versions || (t.fixtures["add_sub"] && t.listsVersions(ctx, "add_sub"))
	return nil
}

// deployed reports whether a fixture model answers its metadata or
// readiness with 200 over any targeted transport.
func (t *target) deployed(ctx context.Context, name string) bool {
	if t.rest != nil {
		for _, path := range []string{"/v2/models/" + pathEscape(name), "/v2/models/" + pathEscape(name) + "/ready"} {
			cctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
			resp, err := t.rest.Do(cctx, http.MethodGet, path, nil, nil)
			cancel()
			if err == nil && resp.Status == http.StatusOK {
				return true
			}
		}
	}
	if t.grpc != nil {
		_, err, _ := t.fetchModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: name})
		return err == nil
	}
	return false
}

// listsVersions reports whether a model's metadata lists versions, over any
// targeted transport.
func (t *target) listsVersions(ctx context.Context, model string) bool {
	if t.rest != nil {
		cctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
		resp, err := t.rest.Do(cctx, http.MethodGet, "/v2/models/"+model, nil, nil)
		cancel()
		// Any non-empty versions array counts, even one of the wrong
		// type: a server must not escape the version-routing specs by
		// breaking the metadata schema (which OIP-REST-MMETA-003 reports).
		var m struct {
			Versions []json.RawMessage `json:"versions"`
		}
		if err == nil && resp.Status == http.StatusOK && json.Unmarshal(resp.Body, &m) == nil && len(m.Versions) > 0 {
			return true
		}
	}
	if t.grpc != nil {
		m, err, _ := t.fetchModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: model})
		return err == nil && len(m.GetVersions()) > 0
	}
	return false
}

// needVersions skips a version-routing spec when the server does not
// version models: catalog A-41 runs version routing only when model
// metadata lists versions (A-08: such servers may answer 501).
func needVersions() {
	needFixture("versioned")
	if !tgt.versions {
		Skip(skipNotApplicable + "the metadata of model versioned lists no versions, so version routing is not tested (A-41)")
	}
}

// needFixture skips the current spec when a fixture model is not deployed.
// A missing core fixture makes the verdict partial; a missing optional one
// (identity_bf16) only means the spec does not apply.
func needFixture(name string) {
	tgt.mu.Lock()
	deployed := tgt.fixtures[name]
	tgt.mu.Unlock()
	if deployed {
		return
	}
	if optionalFixtures[name] {
		Skip(skipOptionalFixture + name)
	}
	if name == "versioned" && !tgt.versioning {
		Skip(skipNotApplicable + "fixture versioned is not deployed and the server lists no model versions (A-41)")
	}
	Skip(skipFixture + name)
}

// Skip reasons the report builder recognizes.
const (
	skipFixture         = "fixture not deployed: "
	skipOptionalFixture = "optional fixture not deployed: "
)

var optionalFixtures = func() map[string]bool {
	m := map[string]bool{}
	fs, err := specs.LoadFixtures()
	if err != nil {
		panic(err)
	}
	for _, f := range fs {
		if f.Optional {
			m[f.Name] = true
		}
	}
	return m
}()

// noteAnswer tracks unanswered calls and aborts the suite when the server
// has stopped answering: the remaining specs could only time out.
func (t *target) noteAnswer(noAnswer error, what string) {
	t.mu.Lock()
	if noAnswer == nil {
		t.noAnswer = 0
		t.mu.Unlock()
		return
	}
	t.noAnswer++
	n := t.noAnswer
	t.lastMiss = fmt.Sprintf("%s: %v", what, noAnswer)
	last := t.lastMiss
	t.mu.Unlock()
	if n < maxNoAnswer {
		return
	}
	// One route that hangs is a failure of the specs that use it, not the
	// end of the run: abort only when the liveness probe gets no answer
	// either.
	if t.probe() {
		t.mu.Lock()
		t.noAnswer = 0
		t.mu.Unlock()
		return
	}
	AbortSuite(fmt.Sprintf("server stopped answering: %d consecutive calls got no answer, nor did the liveness probe (last: %s)", n, last), 2)
}

// probe reports whether the server answers its liveness probe at all (any
// status), over every targeted transport. It bypasses noteAnswer.
func (t *target) probe() bool {
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.Timeout)
	defer cancel()
	if t.rest != nil {
		if _, err := t.rest.Do(ctx, http.MethodGet, "/v2/health/live", nil, nil); err != nil {
			return false
		}
	}
	if t.grpc != nil {
		cctx, ccancel := t.grpc.Context(ctx)
		defer ccancel()
		if _, err := t.grpc.Stub().ServerLive(cctx, &inferencepb.ServerLiveRequest{}); grpcNoAnswer(err) != nil {
			return false
		}
	}
	return true
}

// do sends one HTTP request through the REST client's raw interface.
//
// Every request is marked replayable: an HTTP/1.1 server may close a
// kept-alive connection at any time (uvicorn does so after a 500, without
// "Connection: close"), and a request that went out on such a connection
// just before the close fails with a reset unless the client sends it again
// on a fresh connection, as curl does. The suite's requests are safe to
// replay (fixtures are stateless), and net/http replays only requests it is
// told are idempotent: an Idempotency-Key with no value says so and is not
// sent on the wire. Without this, one spec's server error turns the next
// spec's request into "no answer".
func (t *target) do(ctx context.Context, method, path string, header http.Header, body []byte) *exchange {
	e := &exchange{method: method, path: path, reqHeader: header, reqBody: body}
	sent := header.Clone()
	if sent == nil {
		sent = http.Header{}
	}
	sent["Idempotency-Key"] = nil
	resp, err := t.rest.Do(ctx, method, path, sent, body)
	if err != nil {
		e.err = err
		if !errors.Is(err, client.ErrResponseTooLarge) { // too large is still an answer
			t.noteAnswer(err, method+" "+path)
		}
		return e
	}
	t.noteAnswer(nil, "")
	e.status, e.header, e.body = resp.Status, resp.Header, resp.Body
	return e
}

// stillLive is the check run after every negative spec: the server must
// still answer its liveness probe as it did before the run. It returns a
// finding for the whole spec (req ""), with the probe as evidence.
func (t *target) stillLive(ctx context.Context, spec string) finding {
	if t.rest != nil {
		e := t.do(ctx, http.MethodGet, "/v2/health/live", nil, nil)
		if e.err != nil {
			return on("", e, fmt.Errorf("server stopped answering after %q: GET /v2/health/live: %v", spec, e.err))
		}
		if t.liveREST == http.StatusOK && e.status != http.StatusOK {
			return on("", e, fmt.Errorf("server is no longer live after %q: GET /v2/health/live %s", spec, e.got()))
		}
	}
	if t.grpc != nil {
		resp, c := invoke(ctx, "ServerLive", &inferencepb.ServerLiveRequest{}, t.grpc.Stub().ServerLive)
		switch {
		case grpcNoAnswer(c.err) != nil:
			return on("", c, fmt.Errorf("server stopped answering after %q: ServerLive: %v", spec, c.err))
		case t.liveGRPC && (c.err != nil || !resp.GetLive()):
			return on("", c, fmt.Errorf("server is no longer live after %q: ServerLive %s", spec, c.got()))
		}
	}
	return finding{}
}

// afterNegative registers the liveness check that follows a negative spec.
func afterNegative() {
	spec := CurrentSpecReport().FullText()
	DeferCleanup(func(ctx SpecContext) {
		grade(tgt.stillLive(ctx, spec))
	})
}

// isUnimplemented reports a gRPC UNIMPLEMENTED status.
func isUnimplemented(err error) bool { return status.Code(err) == codes.Unimplemented }

// pathEscape escapes a model name for a URL path segment.
func pathEscape(s string) string { return url.PathEscape(s) }
