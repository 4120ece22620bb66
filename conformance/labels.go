package conformance

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/specs"
)

// Feature is an optional capability a spec needs beyond the core protocol:
// one of the extension names of the vocabulary in package specs, so a
// server's advertisement maps onto features one to one.
type Feature = specs.Extension

// The features the suite has specs for.
const (
	FeatureBinaryTensorData   = specs.ExtBinaryTensorData
	FeatureClassification     = specs.ExtClassification
	FeatureLogging            = specs.ExtLogging
	FeatureModelConfiguration = specs.ExtModelConfiguration
	FeatureModelRepository    = specs.ExtModelRepository
	FeatureParameters         = specs.ExtParameters
	FeatureSchedulePolicy     = specs.ExtSchedulePolicy
	FeatureSequence           = specs.ExtSequence
	FeatureStatistics         = specs.ExtStatistics
	FeatureSystemSharedMemory = specs.ExtSystemSharedMemory
	FeatureTrace              = specs.ExtTrace
)

// Features is the closed feature vocabulary: the extensions of package specs.
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

// Label keys. A spec carries one transport label, zero or more feature
// labels and one or more requirement labels.
const (
	labelKeyTransport = "transport:"
	labelKeyFeature   = "feature:"
	labelKeyReq       = specs.LabelPrefix
)

// catalog is the requirement catalog the labels are checked against.
var catalog = specs.MustCatalog()

// Req labels a spec with the requirements it checks. An ID missing from the
// catalog panics while the spec tree is built, so a typo can never produce a
// spec that silently covers nothing.
func Req(ids ...string) Labels {
	if len(ids) == 0 {
		panic("conformance: Req needs at least one requirement ID")
	}
	out := make(Labels, 0, len(ids))
	for _, id := range ids {
		if _, ok := catalog.Get(id); !ok {
			panic(fmt.Sprintf("conformance: unknown requirement ID %q in a spec label", id))
		}
		out = append(out, labelKeyReq+id)
	}
	return out
}

// Needs labels a spec with the features it requires; an unknown feature
// panics while the tree is built.
func Needs(fs ...Feature) Labels {
	out := make(Labels, 0, len(fs))
	for _, f := range fs {
		if !slices.Contains(Features, f) {
			panic(fmt.Sprintf("conformance: unknown feature %q in a spec label", f))
		}
		out = append(out, labelKeyFeature+string(f))
	}
	return out
}

// Over labels a container with its transport.
func Over(t Transport) Labels {
	if t != TransportREST && t != TransportGRPC {
		panic(fmt.Sprintf("conformance: unknown transport %q", t))
	}
	return Labels{labelKeyTransport + string(t)}
}

// labelValues returns the values of the labels with the given key prefix.
func labelValues(labels []string, key string) []string {
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
