package selftest

import (
	"fmt"
	"slices"

	"github.com/oipkit/oipkit/conformance"
	"github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/verdict"
)

// What the tests expect of every extension is derived from the catalog,
// the profiles and the reference server's advertisement, so that adding an
// extension does not mean editing lists here.

// listedReqs returns, sorted, the requirement "a server supporting X lists
// X in extensions" (by the catalog's convention its group's -001) of every
// extension the reference server advertises, over REST; probed keeps only
// the extensions the suite probes (the others' specs run only when
// advertised).
func listedReqs(probed bool) []string {
	var out []string
	for _, e := range reference.Extensions {
		if probed && !slices.Contains(engine.Probed(), e) {
			continue
		}
		id := e.Group() + "-001"
		r, ok := specs.MustCatalog().Get(id)
		if !ok {
			panic(fmt.Sprintf("selftest: extension %s has no %s in the catalog", e, id))
		}
		if r.AppliesTo(specs.TransportREST) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// with returns ids followed by more, in a new slice.
func with(ids []string, more ...string) []string {
	return append(slices.Clone(ids), more...)
}

// profileVerdicts maps every profile of specs/profiles.yaml to pass when
// supported says the reference server, as the run reaches it, supports it,
// and to not-supported otherwise.
func profileVerdicts(supported func(conformance.Profile) bool) map[string]verdict.Status {
	ps, err := conformance.Profiles()
	if err != nil || len(ps) == 0 {
		panic(fmt.Sprintf("selftest: profiles: %d, %v", len(ps), err))
	}
	m := map[string]verdict.Status{}
	for _, p := range ps {
		m[p.Name] = verdict.NotSupported
		if supported(p) {
			m[p.Name] = verdict.Pass
		}
	}
	return m
}

// over: the profiles of one transport (a run that targets only it).
func over(t specs.Transport) func(conformance.Profile) bool {
	return func(p conformance.Profile) bool { return p.Transport == t }
}

// core: the profiles that need no extension (a run with --features none).
func core(p conformance.Profile) bool { return len(p.Features) == 0 }
