package reference

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/oipkit/oipkit/specs"
)

// The extension seam. Every protocol extension the server implements is one
// entry of extensionRegistry, defined in its own file ext_<name>.go (name as
// advertised: ext_statistics.go): its REST routes, the gRPC methods it
// implements (methods of grpcService in that same file) and whether the
// server advertises it. The server metadata's "extensions" list is derived
// from the registry, so an extension is advertised exactly when its entry
// says so. CONTRIBUTING.md ("Adding an extension") walks through the files.

// extension is one protocol extension of the reference server.
type extension struct {
	name specs.Extension
	// advertised puts the extension in the server metadata's "extensions".
	advertised bool
	// capabilities are advertised after the name, each as its own entry
	// "name(capability)", as Triton does: "model_repository(unload_dependents)".
	capabilities []string
	// rest are the extension's REST routes. They are tried when no core
	// route matches, and before the model metadata route, so that a literal
	// segment wins over a model name (/v2/models/stats is the statistics of
	// every model, as in Triton).
	rest []extRoute
	// grpc names the RPCs of inference.GRPCInferenceService the extension
	// implements, as methods of grpcService in its file; a test checks that
	// none of them answers UNIMPLEMENTED.
	grpc []string
}

// extRoute is one REST route of an extension.
type extRoute struct {
	method string // GET or POST; GET routes also answer HEAD
	// path is the route template, "/v2/models/{m}/versions/{v}/stats":
	// {m} and {v} match one non-empty segment, the model name and version.
	path  string
	serve func(s *Server, w *statusWriter, r *http.Request, p routeParams)
}

// routeParams are the unescaped {m} and {v} of a matched route.
type routeParams struct{ model, version string }

// extensionRegistry is every extension the server implements, in the order
// it advertises them.
var extensionRegistry = []*extension{
	&extBinaryTensorData,
	&extClassification,
	&extModelConfiguration,
	&extStatistics,
	&extModelRepository,
	&extSequence,
	&extGenerate,
	&extSystemSharedMemory,
	&extCUDASharedMemory,
	&extLogging,
	&extTrace,
	&extParameters,
	&extSchedulePolicy,
}

// Extensions lists the protocol extensions the server advertises in its
// metadata, derived from the registry.
var Extensions = advertisedExtensions()

// Advertised is the server metadata's "extensions": every advertised
// extension's name, each followed by its capabilities.
var Advertised = advertisedNames()

func advertisedExtensions() []specs.Extension {
	var out []specs.Extension
	for _, e := range extensionRegistry {
		if e.advertised {
			out = append(out, e.name)
		}
	}
	return out
}

func advertisedNames() []string {
	out := []string{}
	for _, e := range extensionRegistry {
		if !e.advertised {
			continue
		}
		out = append(out, string(e.name))
		for _, c := range e.capabilities {
			out = append(out, string(e.name)+"("+c+")")
		}
	}
	return out
}

// extBinaryTensorData is the binary tensor data extension (REST framing of
// raw tensor bytes after the JSON header). It has no routes of its own: the
// inference route decodes and encodes the framing (package oip).
var extBinaryTensorData = extension{name: specs.ExtBinaryTensorData, advertised: true}

// extRouteMatch finds the extension route of escapedPath. ok is false when
// no route has that path; allow lists the methods of the routes that have
// it when none accepts method.
func extRouteMatch(method, escapedPath string) (rt *extRoute, p routeParams, allow []string, ok bool) {
	var buf [maxRouteSegments]string
	n, split := splitPath(escapedPath, &buf)
	if !split {
		return nil, routeParams{}, nil, false
	}
	segs := buf[:n]
	for _, e := range extensionRegistry {
		for i := range e.rest {
			r := &e.rest[i]
			params, match := matchTemplate(r.path, segs)
			if !match {
				continue
			}
			ok = true
			if r.method == method || r.method == http.MethodGet && method == http.MethodHead {
				return r, params, nil, true
			}
			allow = append(allow, r.method)
			if r.method == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	return nil, routeParams{}, allow, ok
}

// matchTemplate matches unescaped path segments against a route template.
func matchTemplate(template string, segs []string) (routeParams, bool) {
	var p routeParams
	rest := strings.TrimPrefix(template, "/")
	for i := 0; ; i++ {
		t, after, more := strings.Cut(rest, "/")
		if i >= len(segs) {
			return p, false
		}
		switch t {
		case "{m}":
			if segs[i] == "" {
				return p, false
			}
			p.model = segs[i]
		case "{v}":
			if segs[i] == "" {
				return p, false
			}
			p.version = segs[i]
		default:
			if segs[i] != t {
				return p, false
			}
		}
		if !more {
			return p, i == len(segs)-1
		}
		rest = after
	}
}

// serveExtension answers a request that an extension route matches; it
// reports false when none does (the caller answers 404).
func (s *Server) serveExtension(w *statusWriter, r *http.Request) bool {
	rt, p, allow, ok := extRouteMatch(r.Method, r.URL.EscapedPath())
	switch {
	case !ok:
		return false
	case rt == nil:
		slices.Sort(allow)
		a := strings.Join(slices.Compact(allow), ", ")
		w.Header().Set("Allow", a)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %q; allowed: %s", r.Method, r.URL.Path, a))
		return true
	}
	rt.serve(s, w, r, p)
	return true
}
