package engine

import (
	"context"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/conformance/report"
)

// Probes. A server's advertisement is a claim, not a fact: one that serves
// an extension may not list it, and one that lists it may not serve it.
// Every extension with specs therefore registers a probe (in its ext_*.go
// file of package suite) that tries the extension once, before the specs
// run, whatever the server advertises. The extension's specs run when it is
// advertised or observed; the report records both, and the specs grade the
// disagreements (the extension's "lists X in extensions" requirement for
// one that works but is not listed, OIP-GEN-005 for one that is listed but
// does not work).

// ProbeResult is what a probe found out.
type ProbeResult struct {
	// Outcome is report.ProbeObserved, ProbeAbsent or ProbeInconclusive.
	Outcome report.ProbeOutcome
	// Detail says what was sent and seen, in one line.
	Detail string
	// Evidence is the exchange or call that decided the outcome.
	Evidence Evidencer
}

// Probe tries one extension against the server. It runs before the specs,
// through p, whose calls never skip.
type Probe func(ctx context.Context, p *Prober) ProbeResult

// probes is the registry, keyed by extension.
var probes = map[Feature]Probe{}

// RegisterProbe registers the probe of an extension. It returns true so
// that a suite file can register at package level:
//
//	var _ = engine.RegisterProbe(specs.ExtBinaryTensorData, probeBinary)
//
// An unknown extension or a second probe for one panics while the suite is
// built.
func RegisterProbe(ext Feature, p Probe) bool {
	if !ext.Known() {
		panic(fmt.Sprintf("conformance: probe for unknown extension %q", ext))
	}
	if _, dup := probes[ext]; dup {
		panic(fmt.Sprintf("conformance: a second probe for extension %q", ext))
	}
	probes[ext] = p
	return true
}

// Probed lists the extensions that have a probe.
func Probed() []Feature {
	var out []Feature
	for _, f := range Features {
		if probes[f] != nil {
			out = append(out, f)
		}
	}
	return out
}

// runProbes runs every registered probe, in vocabulary order.
func (t *Target) runProbes(ctx context.Context) {
	for _, f := range Probed() {
		r := probes[f](ctx, &Prober{t: t})
		t.mu.Lock()
		t.probes[f] = r
		t.mu.Unlock()
	}
}

// ProbeOf returns the probe result of ext; ok is false when the extension
// has no probe.
func ProbeOf(ext Feature) (r ProbeResult, ok bool) {
	current.mu.Lock()
	defer current.mu.Unlock()
	r, ok = current.probes[ext]
	return r, ok
}

// Prober is what a probe may use: calls that never skip the (not yet
// running) spec, and what discovery found.
type Prober struct{ t *Target }

// Targeted reports whether the run tests transport tr.
func (p *Prober) Targeted(tr Transport) bool {
	return tr == TransportREST && p.t.rest != nil || tr == TransportGRPC && p.t.grpc != nil
}

// Deployed reports whether a fixture model is deployed.
func (p *Prober) Deployed(fixture string) bool { return p.t.Deployed(fixture) }

// A probe's requests are fully formed (an id, as [Request] and [PBRequest]
// build them) and sent again once when the answer is a server fault (a
// 5xx, a gRPC INTERNAL, UNKNOWN or UNAVAILABLE): a transient fault, or a
// defect of some other rule, must not decide whether an extension exists.
// What a second fault leaves is inconclusive, never absent.

// Get sends GET path, again once on a 5xx.
func (p *Prober) Get(ctx context.Context, path string) *Exchange {
	return p.Do(ctx, http.MethodGet, path, nil, nil)
}

// Do sends one HTTP request as it is, again once on a 5xx.
func (p *Prober) Do(ctx context.Context, method, path string, header http.Header, body []byte) *Exchange {
	e := p.t.send(ctx, method, path, header, body)
	if e.Err == nil && e.Status >= 500 && ctx.Err() == nil {
		e = p.t.send(ctx, method, path, header, body)
	}
	return e
}

// Post sends a REST inference request, again once on a 5xx.
func (p *Prober) Post(ctx context.Context, model, version string, b Body) *Exchange {
	body, h := b.wire()
	return p.Do(ctx, http.MethodPost, InferPath(model, version), h, body)
}

// Call makes the RPC name of inference.GRPCInferenceService with req and
// decodes the answer into resp, again once on a server fault.
func (p *Prober) Call(ctx context.Context, name string, req, resp proto.Message) *Call {
	c := p.t.call(ctx, methodPrefix+name, req, resp)
	if grpcServerFault(c.Err) && ctx.Err() == nil {
		c = p.t.call(ctx, methodPrefix+name, req, resp)
	}
	return c
}

// grpcServerFault reports a gRPC status the server sent for a fault of its
// own (no answer at all is not one: the route's health decides that).
func grpcServerFault(err error) bool {
	switch status.Code(err) {
	case codes.Internal, codes.Unknown:
		return true
	case codes.Unavailable:
		return GRPCNoAnswer(err) == nil
	}
	return false
}

// Inconclusive is the result of a probe that could not tell, with why.
func Inconclusive(ev Evidencer, format string, args ...any) ProbeResult {
	return ProbeResult{Outcome: report.ProbeInconclusive, Detail: fmt.Sprintf(format, args...), Evidence: ev}
}

// Observed is the result of a probe that saw the extension work.
func Observed(ev Evidencer, format string, args ...any) ProbeResult {
	return ProbeResult{Outcome: report.ProbeObserved, Detail: fmt.Sprintf(format, args...), Evidence: ev}
}

// Absent is the result of a probe that got an answer, and not the
// extension's.
func Absent(ev Evidencer, format string, args ...any) ProbeResult {
	return ProbeResult{Outcome: report.ProbeAbsent, Detail: fmt.Sprintf(format, args...), Evidence: ev}
}

// ProbeStep tries an extension over one transport: Observed when the
// answer shows it working, Absent when an answer shows it missing,
// Unanswered when no usable answer came.
type ProbeStep func(ctx context.Context) ProbeResult

// Unanswered is a probe step that got no usable answer: it decides nothing.
func Unanswered() ProbeResult { return ProbeResult{Outcome: report.ProbeInconclusive} }

// RESTThenGRPC is the usual probe of an extension with a REST route and a
// gRPC RPC: it runs the REST step when REST is targeted, then the gRPC step
// when gRPC is. The first step that observes the extension decides; else
// the first that found it absent; else the probe is inconclusive (why).
func (p *Prober) RESTThenGRPC(ctx context.Context, rest, grpc ProbeStep, why string) ProbeResult {
	var absent *ProbeResult
	for _, s := range []struct {
		tr   Transport
		step ProbeStep
	}{{TransportREST, rest}, {TransportGRPC, grpc}} {
		if !p.Targeted(s.tr) {
			continue
		}
		switch r := s.step(ctx); r.Outcome {
		case report.ProbeObserved:
			return r
		case report.ProbeAbsent:
			if absent == nil {
				absent = &r
			}
		}
	}
	if absent != nil {
		return *absent
	}
	return Inconclusive(nil, "%s", why)
}
