package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/specs"
)

// Feature is an optional capability a spec needs beyond the core protocol:
// one of the extension names of the vocabulary in package specs, so a
// server's advertisement maps onto features one to one.
type Feature = specs.Extension

// Features is the closed feature vocabulary: the extensions of package specs.
var Features = specs.Extensions

// Transport is the protocol a spec speaks.
type Transport = specs.Transport

// The transports.
const (
	TransportREST = specs.TransportREST
	TransportGRPC = specs.TransportGRPC
)

// Label keys. A spec carries one transport label, zero or more feature
// labels and one or more requirement labels.
const (
	LabelKeyTransport = "transport:"
	LabelKeyFeature   = "feature:"
	LabelKeyReq       = specs.LabelPrefix
)

// Catalog returns the requirement catalog the labels are checked against and
// findings are graded by. It is parsed at first use, not at init, because
// every oipkit command links this package and only conform needs it.
var Catalog = sync.OnceValue(specs.MustCatalog)

// Req labels a spec with the requirements it checks. An ID missing from the
// catalog panics while the spec tree is built, so a typo can never produce a
// spec that silently covers nothing.
func Req(ids ...string) ginkgo.Labels {
	if len(ids) == 0 {
		panic("conformance: Req needs at least one requirement ID")
	}
	out := make(ginkgo.Labels, 0, len(ids))
	for _, id := range ids {
		if _, ok := Catalog().Get(id); !ok {
			panic(fmt.Sprintf("conformance: unknown requirement ID %q in a spec label", id))
		}
		out = append(out, LabelKeyReq+id)
	}
	return out
}

// Needs labels a spec with the features it requires; an unknown feature
// panics while the tree is built.
func Needs(fs ...Feature) ginkgo.Labels {
	out := make(ginkgo.Labels, 0, len(fs))
	for _, f := range fs {
		if !slices.Contains(Features, f) {
			panic(fmt.Sprintf("conformance: unknown feature %q in a spec label", f))
		}
		out = append(out, LabelKeyFeature+string(f))
	}
	return out
}

// RunsLast orders a container after every other one: for specs that can
// change a server's state for good (a failed model load under Triton's
// strict readiness). Ginkgo runs higher priorities first; the default is 0.
var RunsLast = ginkgo.SpecPriority(-1)

// RunsAfterLast, RunsVeryLast and RunsFinal order the requests some
// servers do not survive after everything else (RunsLast included), in
// that order, so that a server that dies leaves as few specs not run as
// can be: a container of oversized requests is RunsAfterLast; one that
// kills a runtime we run is RunsVeryLast (classification of a BYTES
// output makes Triton 2.51 exit); the deep nesting, which kills Triton
// too, is RunsFinal — on Triton it is not run, the one spec a run there
// loses.
var (
	RunsAfterLast = ginkgo.SpecPriority(-2)
	RunsVeryLast  = ginkgo.SpecPriority(-3)
	RunsFinal     = ginkgo.SpecPriority(-4)
)

// Oversized labels the specs that send oversized requests on purpose (a
// 65 MiB body or message): `--label-filter '!oversized'` leaves them out,
// as a run that measures the suite's own memory does.
var Oversized = ginkgo.Label("oversized")

// Over labels a container with its transport.
func Over(t Transport) ginkgo.Labels {
	if t != TransportREST && t != TransportGRPC {
		panic(fmt.Sprintf("conformance: unknown transport %q", t))
	}
	return ginkgo.Labels{LabelKeyTransport + string(t)}
}

// LabelValues returns the values of the labels with the given key prefix,
// sorted and without duplicates.
func LabelValues(labels []string, key string) []string {
	var out []string
	for _, l := range labels {
		if v, ok := strings.CutPrefix(l, key); ok {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// LabelFilter returns the ginkgo label filter that selects the specs for the
// given supported features and targeted transports.
func LabelFilter(features []Feature, transports []Transport) string {
	feat := "feature: isEmpty"
	if len(features) > 0 {
		names := make([]string, len(features))
		for i, f := range features {
			names[i] = string(f)
		}
		sort.Strings(names)
		feat = "feature: isSubsetOf {" + strings.Join(names, ",") + "}"
	}
	names := make([]string, len(transports))
	for i, t := range transports {
		names[i] = string(t)
	}
	sort.Strings(names)
	return feat + " && transport: isSubsetOf {" + strings.Join(names, ",") + "}"
}
