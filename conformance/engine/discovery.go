package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"

	"github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// ginkgo.Skip-message prefixes the report builder recognizes.
const (
	// SkipNotApplicable: the requirement does not apply to this server; it
	// never makes a verdict partial.
	SkipNotApplicable = "not applicable: "
	// SkipFixture: a fixture the spec needs is not deployed.
	SkipFixture = "fixture not deployed: "
	// SkipOptionalFixture: an optional fixture is not deployed; the
	// requirement does not apply.
	SkipOptionalFixture = "optional fixture not deployed: "
	// SkipNotRun: the spec was not run (a route it needs does not answer,
	// or the run ended early); the run is incomplete.
	SkipNotRun = "not run: "
)

// discover reads server metadata, finds the deployed fixtures, probes every
// extension the suite has a probe for, and settles the features.
func (t *Target) discover(ctx context.Context) {
	t.serverMetadata(ctx)
	fixtures, err := specs.LoadFixtures()
	if err != nil {
		t.Problems = append(t.Problems, "fixture discovery: "+err.Error())
	}
	var core []string
	for _, f := range fixtures {
		if f.Kind == specs.KindCore {
			core = append(core, f.Name)
		}
	}
	t.findFixtures(ctx, core)
	t.runProbes(ctx)
	t.settleFeatures()
	var ext []string
	for _, f := range fixtures {
		if f.Kind == specs.KindExtension && t.Features[Feature(f.Extension)] {
			ext = append(ext, f.Name)
		}
	}
	t.findFixtures(ctx, ext)
	t.versions = t.fixtures["versioned"] && t.listsVersions(ctx, "versioned")
	t.versioning = t.versions || (t.fixtures["add_sub"] && t.listsVersions(ctx, "add_sub"))
}

// serverMetadata reads the implementation's name and version and the
// advertised extensions: from REST, or from gRPC when REST is not targeted
// or its metadata is unusable (the REST specs report that): the features
// must not vanish with it.
func (t *Target) serverMetadata(ctx context.Context) {
	var name, ver string
	var exts []string
	var err error
	if t.rest != nil {
		name, ver, exts, err = t.restServerMetadata(ctx)
		if err != nil {
			t.Problems = append(t.Problems, "REST server metadata: "+err.Error())
		}
	}
	if t.grpc != nil && (t.rest == nil || err != nil) {
		resp := &pb.ServerMetadataResponse{}
		c := t.call(ctx, methodPrefix+"ServerMetadata", &pb.ServerMetadataRequest{}, resp)
		if err = c.Err; err != nil {
			t.Problems = append(t.Problems, "gRPC server metadata: "+err.Error())
		}
		name, ver, exts = resp.GetName(), resp.GetVersion(), resp.GetExtensions()
	}
	t.ImplName, t.ImplVersion, t.Advertised = name, ver, exts
	if t.cfg.ImplementationName != "" {
		t.ImplName = t.cfg.ImplementationName
	}
	if t.ImplName == "" {
		t.ImplName = "unknown"
	}
}

func (t *Target) restServerMetadata(ctx context.Context) (name, ver string, exts []string, err error) {
	e := t.send(ctx, http.MethodGet, "/v2", nil, nil)
	if e.Err != nil {
		return "", "", nil, e.Err
	}
	if e.Status != http.StatusOK {
		return "", "", nil, fmt.Errorf("GET /v2: status %d", e.Status)
	}
	// Member names as sent (encoding/json into a struct would read
	// "Extensions" as extensions); a member of the wrong type is left out
	// here and graded by the specs.
	m, err := DecodeObject(e.Body)
	if err != nil {
		return "", "", nil, fmt.Errorf("GET /v2: %v", err)
	}
	name, _ = StringField(m, "name")
	ver, _ = StringField(m, "version")
	if raw, ok := m["extensions"]; ok && json.Unmarshal(raw, &exts) != nil {
		return "", "", nil, fmt.Errorf(`GET /v2: "extensions" is %s, want an array of strings`, clip(string(m["extensions"]), 80))
	}
	return name, ver, exts, nil
}

// settleFeatures decides which extensions' specs run: the ones named by
// --features, else every extension that is advertised, observed by its
// probe, or that its probe could not tell about (inconclusive: a probe
// that could not tell is no evidence of absence, so the specs grade the
// extension, and its requirements say the probe was inconclusive). It also
// writes the advertised-versus-observed record.
func (t *Target) settleFeatures() {
	advertised := map[Feature][]string{} // extension → capabilities
	for _, name := range t.Advertised {
		ext, capability, ok := specs.ParseAdvertised(name)
		if !ok {
			t.UnknownExtensions = append(t.UnknownExtensions, name)
			continue
		}
		caps := advertised[ext]
		if capability != "" {
			caps = append(caps, capability)
		}
		advertised[ext] = caps
	}
	if t.cfg.Features != nil {
		t.FeatureSource = "flag"
		for _, f := range t.cfg.Features {
			t.Features[f] = true
		}
	} else {
		t.FeatureSource = "discovered"
		for _, f := range Features {
			_, adv := advertised[f]
			if o := t.probes[f].Outcome; adv || o == report.ProbeObserved || o == report.ProbeInconclusive {
				t.Features[f] = true
			}
		}
	}
	for _, f := range Features {
		caps, adv := advertised[f]
		p, probed := t.probes[f]
		r := report.ExtensionResult{Name: string(f), Advertised: adv, Capabilities: caps, Probe: report.ProbeNone, Tested: t.Features[f]}
		if probed {
			r.Probe, r.Detail = p.Outcome, p.Detail
			if p.Evidence != nil {
				r.Evidence = p.Evidence.Evidence()
			}
		}
		t.Extensions = append(t.Extensions, r)
	}
}

// FeatureList returns the features whose specs run, sorted.
func (t *Target) FeatureList() []Feature {
	var fs []Feature
	for f := range t.Features {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i] < fs[j] })
	return fs
}

// findFixtures asks the server, over every targeted transport, for the
// metadata and readiness of each named fixture. A fixture counts as deployed
// when any probe finds it.
func (t *Target) findFixtures(ctx context.Context, names []string) {
	// A few at a time: a server that hangs on model metadata costs one
	// timeout (then its route is known not to answer), not one per fixture.
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			deployed := t.deployed(ctx, name)
			t.mu.Lock()
			t.fixtures[name] = deployed
			t.mu.Unlock()
		})
	}
	wg.Wait()
}

// deployed reports whether a fixture model was declared deployed, or
// answers its metadata or readiness with 200 over any targeted transport.
func (t *Target) deployed(ctx context.Context, name string) bool {
	if slices.Contains(t.cfg.DeclaredFixtures, name) {
		return true
	}
	if t.rest != nil {
		for _, path := range []string{"/v2/models/" + PathEscape(name), "/v2/models/" + PathEscape(name) + "/ready"} {
			if e := t.send(ctx, http.MethodGet, path, nil, nil); e.Err == nil && e.Status == http.StatusOK {
				return true
			}
		}
	}
	if t.grpc != nil {
		return t.modelMetadata(ctx, &pb.ModelMetadataRequest{Name: name}).Err == nil
	}
	return false
}

// listsVersions reports whether a model's metadata lists versions, over any
// targeted transport.
func (t *Target) listsVersions(ctx context.Context, model string) bool {
	if t.rest != nil {
		e := t.send(ctx, http.MethodGet, "/v2/models/"+PathEscape(model), nil, nil)
		// Any non-empty versions array counts, even one of the wrong
		// type: a server must not escape the version-routing specs by
		// breaking the metadata schema (which OIP-REST-MMETA-003 reports).
		// Member names as sent: "Versions" is not versions.
		var versions []json.RawMessage
		if e.Err == nil && e.Status == http.StatusOK {
			if m, err := DecodeObject(e.Body); err == nil && json.Unmarshal(m["versions"], &versions) == nil && len(versions) > 0 {
				return true
			}
		}
	}
	if t.grpc != nil {
		c := t.modelMetadata(ctx, &pb.ModelMetadataRequest{Name: model})
		m, _ := c.Resp.(*pb.ModelMetadataResponse)
		return c.Err == nil && len(m.GetVersions()) > 0
	}
	return false
}

// Deployed reports whether a fixture model is deployed.
func (t *Target) Deployed(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fixtures[name]
}

// Versions reports whether the versioned fixture lists versions, so that
// version routing is tested.
func Versions() bool { return current.versions }

// NeedVersions skips a version-routing spec when the server does not
// version models: catalog A-41 runs version routing only when model
// metadata lists versions (A-08: such servers may answer 501).
func NeedVersions() {
	NeedFixture("versioned")
	if !current.versions {
		ginkgo.Skip(SkipNotApplicable + "the metadata of model versioned lists no versions, so version routing is not tested (A-41)")
	}
}

// NeedFixture skips the current spec when a fixture model is not deployed.
// A missing core fixture makes the verdict partial; a missing optional one
// (identity_bf16) only means the spec does not apply.
func NeedFixture(name string) {
	if current.Deployed(name) {
		return
	}
	if optionalFixtures()[name] {
		ginkgo.Skip(SkipOptionalFixture + name)
	}
	if name == "versioned" && !current.versioning {
		ginkgo.Skip(SkipNotApplicable + "fixture versioned is not deployed and the server lists no model versions (A-41)")
	}
	ginkgo.Skip(SkipFixture + name)
}

// optionalFixtures is computed at first use, not at init: only conform needs it.
var optionalFixtures = sync.OnceValue(func() map[string]bool {
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
})

// Advertises reports whether server metadata lists ext (with or without
// capabilities).
func Advertises(ext Feature) bool {
	return slices.ContainsFunc(current.Extensions, func(r report.ExtensionResult) bool {
		return r.Name == string(ext) && r.Advertised
	})
}

// AdvertisesCapability reports whether server metadata lists ext with
// capability c ("sequence(string_id)").
func AdvertisesCapability(ext Feature, c string) bool {
	return slices.ContainsFunc(current.Extensions, func(r report.ExtensionResult) bool {
		return r.Name == string(ext) && slices.Contains(r.Capabilities, c)
	})
}

// FeatureSource is where the run's features came from: "discovered" or
// "flag".
func FeatureSource() string { return current.FeatureSource }
