package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/conformance/report"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// maxNoAnswer is how many consecutive calls may go unanswered before the run
// is aborted: a server that stopped answering would otherwise turn every
// remaining spec into a slow timeout.
const maxNoAnswer = 4

// Config is what the engine needs to reach and grade a server; package
// conformance fills it from its Options.
type Config struct {
	HTTPURL          string // REST base URL; "" when REST is not tested
	GRPCAddr         string // gRPC host:port; "" when gRPC is not tested
	Header           http.Header
	Host             string
	TLS              *tls.Config // nil: plaintext gRPC; REST uses TLS for https:// URLs
	Timeout          time.Duration
	MaxResponseBytes int64 // client.Options' caps
	MaxMessageBytes  int64
	MaxHeaderBytes   int64
	// Features, when non-nil, overrides the features discovered from the
	// server's advertisement and the probes.
	Features []Feature
	// DeclaredFixtures are taken as deployed without asking the server.
	DeclaredFixtures []string
	// Strict fails a spec on lenient and warning findings too.
	Strict bool
	// ImplementationName names the server in the report; "" means the name
	// from server metadata.
	ImplementationName string
}

// Target is the server under test as the specs see it during a run. Its
// exported fields are what discovery found, for the report.
type Target struct {
	cfg  Config
	rest *client.REST // nil when REST is not targeted
	grpc *client.GRPC // nil when gRPC is not targeted

	ImplName    string
	ImplVersion string
	// Advertised are the extensions server metadata lists, as sent.
	Advertised []string
	// Features are the extensions whose specs run; FeatureSource says why:
	// "discovered" (advertised or observed by a probe) or "flag".
	Features      map[Feature]bool
	FeatureSource string
	// Extensions is the advertised-versus-observed record of every
	// extension of the vocabulary; UnknownExtensions the advertised names
	// outside it.
	Extensions        []report.ExtensionResult
	UnknownExtensions []string
	// Problems are discovery problems worth printing.
	Problems []string

	liveREST int  // status of GET /v2/health/live before the run
	liveGRPC bool // ServerLive answered OK with live=true before the run

	routes *routeHealth

	mu       sync.Mutex
	fixtures map[string]bool // fixture name → deployed
	versions bool            // the versioned fixture's metadata lists versions
	// versioning: some fixture's metadata lists versions. A server that
	// versions nothing cannot deploy the versioned fixture.
	versioning bool
	probes     map[Feature]ProbeResult
	noAnswer   int
	lastMiss   string
	// received are the 2xx exchanges of the running spec whose bodies are
	// checked against the schema after it; schemaSeen the problems already
	// recorded in this run (schema.go).
	received   []*Exchange
	schemaSeen map[string]bool
}

// current is the target of the run; nil while the tree is only previewed.
var current *Target

// Current returns the target of the run, or nil before [Connect].
func Current() *Target { return current }

// Connect builds the clients, makes sure every target is an OIP server
// (client.Identify: one line and ErrNotOIP or ErrUnreachable within about
// 2 s otherwise), and discovers what the specs need: the implementation's
// name, its fixtures, its extensions (advertised and probed) and whether it
// versions models. It makes the target current.
func Connect(ctx context.Context, cfg Config) (*Target, error) {
	t := &Target{cfg: cfg, Features: map[Feature]bool{}, fixtures: map[string]bool{},
		probes: map[Feature]ProbeResult{}, routes: newRouteHealth(), schemaSeen: map[string]bool{}}
	copts := client.Options{Timeout: cfg.Timeout, Header: cfg.Header, Host: cfg.Host, TLS: cfg.TLS,
		MaxResponseBytes: cfg.MaxResponseBytes, MaxMessageBytes: cfg.MaxMessageBytes, MaxHeaderBytes: cfg.MaxHeaderBytes}
	var err error
	if cfg.HTTPURL != "" {
		if u, perr := url.Parse(cfg.HTTPURL); perr != nil || u.Host == "" {
			return nil, fmt.Errorf("HTTP target %q: not a URL", cfg.HTTPURL)
		}
		if t.rest, err = client.NewREST(cfg.HTTPURL, false, copts); err != nil {
			return nil, fmt.Errorf("HTTP client: %w", err)
		}
	}
	if cfg.GRPCAddr != "" {
		if t.grpc, err = client.NewGRPC(cfg.GRPCAddr, false, copts); err != nil {
			return nil, fmt.Errorf("gRPC client: %w", err)
		}
	}
	if err := t.identify(ctx); err != nil {
		t.Close()
		return nil, err
	}
	t.baseline(ctx)
	t.discover(ctx)
	current = t
	return t, nil
}

// Close releases the clients.
func (t *Target) Close() {
	if t.rest != nil {
		t.rest.Close()
	}
	if t.grpc != nil {
		t.grpc.Close()
	}
}

// identify runs client.Identify on every target at once, so that the whole
// check takes one identification budget.
func (t *Target) identify(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(ctx, client.DefaultIdentifyTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var restErr, grpcErr error
	if t.rest != nil {
		wg.Go(func() { _, restErr = t.rest.Identify(ictx) })
	}
	if t.grpc != nil {
		wg.Go(func() { _, grpcErr = t.grpc.Identify(ictx) })
	}
	wg.Wait()
	// One line, whichever failed: the CLI prints it as is.
	switch {
	case restErr != nil && grpcErr != nil:
		return fmt.Errorf("%w; %w", restErr, grpcErr)
	case restErr != nil:
		return restErr
	}
	return grpcErr
}

// baseline records how liveness is answered before the run, so that a
// negative spec can tell a server that stopped being live.
func (t *Target) baseline(ctx context.Context) {
	if t.rest != nil {
		if e := t.send(ctx, http.MethodGet, "/v2/health/live", nil, nil); e.Err == nil {
			t.liveREST = e.Status
		}
	}
	if t.grpc != nil {
		resp := &pb.ServerLiveResponse{}
		c := t.call(ctx, methodPrefix+"ServerLive", &pb.ServerLiveRequest{}, resp)
		t.liveGRPC = c.Err == nil && resp.GetLive()
	}
}

// Transports lists the targeted transports.
func (t *Target) Transports() []Transport {
	var ts []Transport
	if t.rest != nil {
		ts = append(ts, TransportREST)
	}
	if t.grpc != nil {
		ts = append(ts, TransportGRPC)
	}
	return ts
}

// Strict reports whether lenient and warning findings fail specs.
func (t *Target) Strict() bool { return t.cfg.Strict }

// Fixtures maps each fixture the suite looked for to whether it is deployed.
func (t *Target) Fixtures() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]bool, len(t.fixtures))
	for k, v := range t.fixtures {
		out[k] = v
	}
	return out
}

// RouteProblems describes the routes that did not answer and cost specs.
func (t *Target) RouteProblems() []string { return t.routes.problems() }

const methodPrefix = "/inference.GRPCInferenceService/"

// ----- calls -----

// send makes one HTTP request, unless its route does not answer. It never
// skips and never aborts: discovery, probes and the liveness check use it
// directly; specs go through [Do].
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
func (t *Target) send(ctx context.Context, method, path string, header http.Header, body []byte) *Exchange {
	e := &Exchange{Method: method, Path: path, ReqHeader: header, ReqBody: body}
	route := restRoute(method, path)
	if err := t.routes.check(route); err != nil {
		e.Err = err
		return e
	}
	sent := header.Clone()
	if sent == nil {
		sent = http.Header{}
	}
	sent["Idempotency-Key"] = nil
	resp, err := t.rest.Do(ctx, method, path, sent, body)
	if err != nil {
		e.Err = err
		if isTimeout(err) {
			t.routes.timedOut(route, err)
		}
		return e
	}
	e.Status, e.Header, e.Body = resp.Status, resp.Header, resp.Body
	return e
}

// call makes one RPC by its full method name into resp, unless its route
// does not answer. Like send, it never skips.
func (t *Target) call(ctx context.Context, method string, req, resp proto.Message) *Call {
	c := &Call{Method: method, Req: req}
	route := grpcRoute(method)
	if err := t.routes.check(route); err != nil {
		c.Err = err
		return c
	}
	cctx, cancel := t.grpc.Context(ctx)
	defer cancel()
	c.Err = t.grpc.Conn().Invoke(cctx, method, req, resp)
	if c.Err == nil {
		c.Resp = resp
	} else if isTimeout(c.Err) {
		t.routes.timedOut(route, c.Err)
	}
	return c
}

// specGate is called by every spec-facing call: a call whose route does not
// answer ends the spec as not run, and a call that got no answer counts
// toward the server having stopped answering.
func (t *Target) specGate(err error, what string, rpc bool) {
	var dead errRouteDead
	if errors.As(err, &dead) {
		t.routes.notRun(dead.route)
		markNotRun()
		ginkgo.Skip(SkipNotRun + dead.Error())
	}
	var noAnswer error
	switch {
	case err == nil:
	case rpc:
		noAnswer = GRPCNoAnswer(err) // a status the server sent is an answer
	case !errors.Is(err, client.ErrResponseTooLarge): // too large is still an answer
		noAnswer = err
	}
	t.noteAnswer(noAnswer, what)
}

// noteAnswer tracks unanswered calls and aborts the suite when the server
// has stopped answering: the remaining specs could only time out.
func (t *Target) noteAnswer(noAnswer error, what string) {
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
	if t.probeLive() {
		t.mu.Lock()
		t.noAnswer = 0
		t.mu.Unlock()
		return
	}
	ginkgo.AbortSuite(fmt.Sprintf("server stopped answering: %d consecutive calls got no answer, nor did the liveness probe (last: %s)", n, last), 2)
}

// probeLive reports whether the server answers its liveness probe at all
// (any status), over every targeted transport.
func (t *Target) probeLive() bool {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	if t.rest != nil {
		if _, err := t.rest.Do(ctx, http.MethodGet, "/v2/health/live", nil, nil); err != nil {
			return false
		}
	}
	if t.grpc != nil {
		cctx, ccancel := t.grpc.Context(ctx)
		defer ccancel()
		if _, err := t.grpc.Stub().ServerLive(cctx, &pb.ServerLiveRequest{}); GRPCNoAnswer(err) != nil {
			return false
		}
	}
	return true
}

// ----- the calls specs make -----

// Targeted reports whether the run tests transport tr.
func Targeted(tr Transport) bool {
	switch tr {
	case TransportREST:
		return current.rest != nil
	case TransportGRPC:
		return current.grpc != nil
	}
	return false
}

// Do sends one HTTP request as it is and returns the exchange. A request on
// a route that does not answer ends the spec as not run.
func Do(ctx context.Context, method, path string, header http.Header, body []byte) *Exchange {
	e := current.send(ctx, method, path, header, body)
	sent(e)
	current.specGate(e.Err, method+" "+path, false)
	current.receive(e)
	return e
}

// Get sends GET path.
func Get(ctx context.Context, path string) *Exchange {
	return Do(ctx, http.MethodGet, path, nil, nil)
}

// Stub is the generated client of inference.GRPCInferenceService, for
// [Invoke].
func Stub() pb.GRPCInferenceServiceClient { return current.grpc.Stub() }

// Invoke makes one RPC of inference.GRPCInferenceService through fn (a
// method of [Stub]) with the client's timeout and metadata, and records it.
// name is the RPC's short name ("ModelInfer").
func Invoke[Q, R proto.Message](ctx context.Context, name string, req Q,
	fn func(context.Context, Q, ...grpc.CallOption) (R, error)) (R, *Call) {
	return InvokeMethod(ctx, methodPrefix+name, req, fn)
}

// InvokeMethod is [Invoke] for any service: method is the full method name
// ("/grpc.health.v1.Health/Check").
func InvokeMethod[Q, R proto.Message](ctx context.Context, method string, req Q,
	fn func(context.Context, Q, ...grpc.CallOption) (R, error)) (R, *Call) {
	c := &Call{Method: method, Req: req}
	route := grpcRoute(method)
	var resp R
	if err := current.routes.check(route); err != nil {
		c.Err = err
	} else {
		cctx, cancel := current.grpc.Context(ctx)
		resp, c.Err = fn(cctx, req)
		cancel()
		if c.Err == nil {
			c.Resp = resp
		} else if isTimeout(c.Err) {
			current.routes.timedOut(route, c.Err)
		}
	}
	sent(c)
	current.specGate(c.Err, method, true)
	return resp, c
}

// Infer sends a ModelInfer.
func Infer(ctx context.Context, req *pb.ModelInferRequest) (*pb.ModelInferResponse, *Call) {
	return Invoke(ctx, "ModelInfer", req, Stub().ModelInfer)
}

// Health is the client of the standard grpc.health.v1 service on the
// target's connection.
func Health() healthpb.HealthClient { return healthpb.NewHealthClient(current.grpc.Conn()) }

// Loopback reports whether every targeted address is on this host (a
// loopback address or "localhost"): only then can the server map shared
// memory the suite creates (the shared memory extensions).
func (t *Target) Loopback() bool {
	var hosts []string
	if t.cfg.HTTPURL != "" {
		u, err := url.Parse(t.cfg.HTTPURL)
		if err != nil {
			return false
		}
		hosts = append(hosts, u.Hostname())
	}
	if t.cfg.GRPCAddr != "" {
		h, _, err := net.SplitHostPort(t.cfg.GRPCAddr)
		if err != nil {
			return false
		}
		hosts = append(hosts, h)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return len(hosts) > 0
}
