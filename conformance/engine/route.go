package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Route health. A server that accepts requests on a route and never answers
// them would cost one timeout per spec that uses the route: minutes for the
// inference route. After the first call on a route that gets no answer in
// time, every later call on it is not sent: inside a spec the spec is
// reported not run ("route does not answer: …"), outside one (discovery,
// probes) the call fails at once. A route is a transport, a method and a
// route template, so /v2/models/add_sub/infer and
// /v2/models/identity_fp32/infer are one route.

// errRouteDead is the error of a call that was not sent because its route
// does not answer.
type errRouteDead struct{ route, why string }

func (e errRouteDead) Error() string {
	return fmt.Sprintf("route does not answer: %s (%s)", e.route, e.why)
}

// routeHealth remembers the routes that did not answer.
type routeHealth struct {
	mu   sync.Mutex
	dead map[string]string // route → why (the first timeout)
	// skipped counts the specs not run because of each route.
	skipped map[string]int
}

func newRouteHealth() *routeHealth {
	return &routeHealth{dead: map[string]string{}, skipped: map[string]int{}}
}

// check returns errRouteDead when route does not answer.
func (h *routeHealth) check(route string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if why, ok := h.dead[route]; ok {
		return errRouteDead{route, why}
	}
	return nil
}

// timedOut marks route as not answering; the first reason is kept.
func (h *routeHealth) timedOut(route string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.dead[route]; !ok {
		h.dead[route] = clip(err.Error(), 200)
	}
}

// notRun records that a spec was not run because of route.
func (h *routeHealth) notRun(route string) {
	h.mu.Lock()
	h.skipped[route]++
	h.mu.Unlock()
}

// problems describes every route that cost specs, one line each.
func (h *routeHealth) problems() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for r, n := range h.skipped {
		out = append(out, fmt.Sprintf("route does not answer: %s (%s); %d spec(s) not run", r, h.dead[r], n))
	}
	sort.Strings(out)
	return out
}

// restRoute is the route of an HTTP request: "REST POST
// /v2/models/{m}/versions/{v}/infer". The model and version segments become
// placeholders; everything else is kept, so /v2 and /v2/ stay apart.
func restRoute(method, path string) string {
	p, _, _ := strings.Cut(path, "?")
	segs := strings.Split(p, "/")
	// segs[0] is "" (leading slash); /v2/models/{m}[/versions/{v}]/…
	if len(segs) > 3 && segs[1] == "v2" && segs[2] == "models" && !(len(segs) == 4 && segs[3] == "stats") {
		segs[3] = "{m}"
		if len(segs) > 5 && segs[4] == "versions" {
			segs[5] = "{v}"
		}
	}
	return "REST " + method + " " + strings.Join(segs, "/")
}

// grpcRoute is the route of an RPC: "gRPC /inference.GRPCInferenceService/ModelInfer".
func grpcRoute(method string) string { return "gRPC " + method }
