package reference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// The model repository extension (Triton's "model_repository"): the index
// of every model the server can serve, loaded or not, and load and unload
// calls, over REST (POST /v2/repository/index,
// /v2/repository/models/{m}/load and /unload) and gRPC (RepositoryIndex,
// RepositoryModelLoad, RepositoryModelUnload).
//
// Every model of the repository the server starts with can be unloaded and
// loaded again. With the fixture models the server also has the two
// fixtures of the extension: repo_target (identity_int32 under its own
// name, for the suite to unload and load) and broken (listed, never
// loaded: loading it always fails).
//
// never_ready (the optional core fixture) is deployed at start like every
// other model, but its load fails there, so it is never ready: its
// readiness answers not ready (REST 400, gRPC OK with ready=false), its
// inference is refused with errNotReady (REST 400, gRPC UNAVAILABLE), its
// metadata is the contract's (identity_int32's tensors), and the index
// lists it UNAVAILABLE with the failure as its reason. It does not make
// the server not ready: a load that fails at start is the gRPC reading of
// server readiness ("ready for inferencing", A-12), which keeps the scripts
// and load tests that wait for readiness working; a load asked for through
// this extension and failing still makes the server not ready (below).
//
// Readiness: a model whose load failed stays listed as UNAVAILABLE with the
// failure as its reason, and the server is not ready while one is (server
// readiness reflects every model it was asked to serve), until the model
// is loaded or unloaded. An unloaded model is listed as UNAVAILABLE
// ("unloaded"); its inference, metadata and readiness calls answer not
// found, as for a model the server does not have.

var extModelRepository = extension{
	name:         specs.ExtModelRepository,
	advertised:   true,
	capabilities: []string{"unload_dependents"},
	rest: []extRoute{
		{method: http.MethodPost, path: "/v2/repository/index", serve: (*Server).serveRepositoryIndex},
		{method: http.MethodPost, path: "/v2/repository/models/{m}/load", serve: (*Server).serveRepositoryLoad},
		{method: http.MethodPost, path: "/v2/repository/models/{m}/unload", serve: (*Server).serveRepositoryUnload},
	},
	grpc: []string{"RepositoryIndex", "RepositoryModelLoad", "RepositoryModelUnload"},
}

// Model states as Triton names them.
const (
	stateReady       = "READY"
	stateUnavailable = "UNAVAILABLE"
)

// errLoad marks a load that failed for a reason of the model (HTTP 400).
var errLoad = errors.New("load failed")

// catalogEntry is one model the server can serve.
type catalogEntry struct {
	// load builds every version of the model; config is a Triton
	// ModelConfig to check the model against, or nil.
	load     func() ([]model.Model, error)
	versions []string // the versions it had when last loaded (for the index)
	loaded   bool
	failed   bool   // the last load failed: the server is not ready
	reason   string // why it is not loaded
	// meta is the metadata of a model the server knows without having it
	// loaded (never_ready); deployed says the server was asked to serve
	// it (until unloaded). Such a model is not ready rather than unknown.
	meta     *oip.ModelMetadata
	deployed bool
}

// errNotReady marks a model that is deployed but not ready: REST 400
// (Triton's "model not ready"; 503 is the A-02 deviation), gRPC
// UNAVAILABLE (OIP-GRPC-ERR-002).
var errNotReady = errors.New("model not ready")

// modelCatalog is every model the server can serve and its state; the
// loaded ones are in the repository.
type modelCatalog struct {
	mu      sync.Mutex
	repo    *model.Repository
	entries map[string]*catalogEntry
	// instances are the models' execution instances: a load's
	// configuration override may set them (instances.go).
	instances *instanceGroups
}

// newModelCatalog lists every model of repo as loaded; with fixtures (repo
// holds them, repo_target among them), it adds broken, which never loads.
func newModelCatalog(repo *model.Repository, fixtures bool) (*modelCatalog, error) {
	c := &modelCatalog{repo: repo, entries: map[string]*catalogEntry{}, instances: newInstanceGroups(nil)}
	for _, name := range repo.Names() {
		var ms []model.Model
		versions := repo.Versions(name)
		for _, v := range versions {
			m, _, err := repo.Lookup(name, v)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
		c.entries[name] = &catalogEntry{
			load:     func() ([]model.Model, error) { return ms, nil },
			versions: versions,
			loaded:   true,
		}
	}
	if fixtures {
		c.entries["broken"] = &catalogEntry{
			load: func() ([]model.Model, error) {
				return nil, fmt.Errorf("model \"broken\": %w: the fixture's loader always fails", errLoad)
			},
			versions: []string{"1"},
			reason:   "not loaded (loading it always fails)",
		}
		md := fixture.NewIdentity(tensor.Int32).Metadata()
		md.Name = "never_ready"
		nr := &catalogEntry{
			load: func() ([]model.Model, error) {
				return nil, fmt.Errorf("model \"never_ready\": %w: the fixture's loader always fails", errLoad)
			},
			versions: md.Versions,
			meta:     &md,
			deployed: true,
		}
		// Loaded at start like the others; the failure is its reason.
		if _, err := nr.load(); err != nil {
			nr.reason = "load at start failed: " + err.Error()
		}
		c.entries["never_ready"] = nr
	}
	return c, nil
}

// notReady returns errNotReady (wrapped with the reason) when name is a
// model the server was asked to serve that is not loaded and whose
// metadata it knows, and nil otherwise (loaded, unloaded or unknown).
func (c *modelCatalog) notReady(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[name]
	if e == nil || e.loaded || !e.deployed || e.meta == nil {
		return nil
	}
	return fmt.Errorf("model %q: %w: %s", name, errNotReady, e.reason)
}

// lookup is repo.Lookup that tells a model that is not ready (errNotReady)
// from one the server does not have (model.ErrNotFound).
func (s *Server) lookup(name, version string) (model.Model, string, error) {
	m, v, err := s.repo.Lookup(name, version)
	if errors.Is(err, model.ErrNotFound) {
		if nr := s.catalog.notReady(name); nr != nil {
			return nil, "", nr
		}
	}
	return m, v, err
}

// metadata returns the metadata of a model that is not ready (notReady).
func (c *modelCatalog) metadata(name string) (oip.ModelMetadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[name]
	if e == nil || e.loaded || !e.deployed || e.meta == nil {
		return oip.ModelMetadata{}, false
	}
	return *e.meta, true
}

// ready reports whether no model is in a failed state.
func (c *modelCatalog) ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.failed {
			return false
		}
	}
	return true
}

// index lists every model (every version of a loaded one), sorted by name;
// readyOnly keeps the loaded ones.
func (c *modelCatalog) index(readyOnly bool) []oip.RepositoryModel {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.repo.Names()
	for n := range c.entries {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := []oip.RepositoryModel{}
	for _, n := range names {
		if vs := c.repo.Versions(n); len(vs) > 0 {
			for _, v := range vs {
				out = append(out, oip.RepositoryModel{Name: n, Version: v, State: stateReady})
			}
			continue
		}
		e := c.entries[n]
		if readyOnly || e == nil {
			continue
		}
		for _, v := range e.versions {
			out = append(out, oip.RepositoryModel{Name: n, Version: v, State: stateUnavailable, Reason: e.reason})
		}
	}
	return out
}

// loadModel loads (or reloads) name; config, when not empty, is a Triton
// ModelConfig in JSON that the model must fit.
func (c *modelCatalog) loadModel(name, config string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[name]
	if e == nil {
		return fmt.Errorf("load model %q: not in the repository: %w", name, model.ErrNotFound)
	}
	ms, err := e.load()
	if err == nil && config != "" {
		err = checkConfig(name, config, ms)
	}
	instances := 0
	if err == nil {
		instances, err = configInstances(name, config)
	}
	if err != nil {
		if !errors.Is(err, oip.ErrInvalid) {
			// A request error (a bad config) leaves the model as it was; a
			// model that cannot be loaded is failed.
			c.repo.Remove(name)
			e.loaded, e.failed, e.reason, e.deployed = false, true, err.Error(), true
		}
		return err
	}
	c.repo.Remove(name)
	e.versions = e.versions[:0]
	for _, m := range ms {
		if err := c.repo.Add(m); err != nil {
			c.repo.Remove(name)
			e.loaded, e.failed, e.reason = false, true, err.Error()
			return fmt.Errorf("load model %q: %w", name, err)
		}
		e.versions = append(e.versions, m.Metadata().Versions...)
	}
	if instances > 0 {
		c.instances.set(name, instances)
	} else {
		c.instances.reset(name)
	}
	e.loaded, e.failed, e.reason, e.deployed = true, false, "", true
	return nil
}

// unloadModel unloads name. The models have no dependents (no ensembles),
// so unload_dependents changes nothing.
func (c *modelCatalog) unloadModel(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[name]
	if e == nil {
		return fmt.Errorf("unload model %q: not in the repository: %w", name, model.ErrNotFound)
	}
	c.repo.Remove(name)
	e.loaded, e.failed, e.reason, e.deployed = false, false, "unloaded", false
	return nil
}

// checkConfig checks a config override against the model: it must be a
// Triton ModelConfig whose name (if set) is the model's and whose inputs
// and outputs (if listed) are the model's, with the model's datatypes. The
// native models have nothing else to configure.
func checkConfig(name, config string, ms []model.Model) error {
	var cfg inferencepb.ModelConfig
	// Members this proto does not know (a newer Triton's) are ignored.
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(config), &cfg); err != nil {
		return invalidf("load model %q: parameter \"config\" is not a JSON model configuration: %v", name, err)
	}
	if cfg.GetName() != "" && cfg.GetName() != name {
		return invalidf("load model %q: the configuration is of model %q", name, cfg.GetName())
	}
	if len(ms) == 0 {
		return nil
	}
	md := ms[len(ms)-1].Metadata()
	check := func(kind string, name string, dt inferencepb.DataType, declared []oip.TensorMetadata) error {
		t := findTensor(declared, name)
		if t == nil {
			return invalidf("load model %q: the configuration's %s %q is not one of the model's", md.Name, kind, name)
		}
		if dt != inferencepb.DataType_TYPE_INVALID && dt != configDataType(t.Datatype) {
			return invalidf("load model %q: the configuration's %s %q is %s, the model's is %s", md.Name, kind, name, dt, configDataType(t.Datatype))
		}
		return nil
	}
	for _, in := range cfg.GetInput() {
		if err := check("input", in.GetName(), in.GetDataType(), md.Inputs); err != nil {
			return err
		}
	}
	for _, out := range cfg.GetOutput() {
		if err := check("output", out.GetName(), out.GetDataType(), md.Outputs); err != nil {
			return err
		}
	}
	return nil
}

// loadParameters reads the load parameters: "config" (a string) and the
// "file:" contents, which this server cannot use (it has no model files).
func loadParameters(name string, config *string, files []string) (string, error) {
	if len(files) > 0 {
		if config == nil {
			return "", invalidf("load model %q: parameter %q needs the \"config\" parameter", name, files[0])
		}
		return "", invalidf("load model %q: parameter %q: this server loads no model files", name, files[0])
	}
	if config == nil {
		return "", nil
	}
	if strings.TrimSpace(*config) == "" {
		return "", invalidf("load model %q: parameter \"config\" is empty", name)
	}
	return *config, nil
}

// loadStatus is the HTTP status of a failed load: a model that exists but
// fails to load is the request's failure (400), as Triton answers.
func loadStatus(err error) int {
	if errors.Is(err, errLoad) {
		return http.StatusBadRequest
	}
	return httpStatus(err)
}

func loadCode(err error) error {
	if errors.Is(err, errLoad) {
		return toStatus(invalidf("%v", err))
	}
	return toStatus(err)
}

// readJSONBody reads an optional JSON object body into v; an empty body
// leaves v as it is.
func (s *Server) readJSONBody(w *statusWriter, r *http.Request, v any) error {
	buf := getBuffer()
	defer putBuffer(buf)
	body, err := s.readBody(w, r, (*buf)[:0])
	*buf = body[:0]
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return invalidf("request body: %v", err)
	}
	return nil
}

// serveRepositoryIndex answers POST /v2/repository/index.
func (s *Server) serveRepositoryIndex(w *statusWriter, r *http.Request, _ routeParams) {
	var req struct {
		Ready *bool `json:"ready"`
	}
	if err := s.readJSONBody(w, r, &req); err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.catalog.index(req.Ready != nil && *req.Ready))
}

// serveRepositoryLoad answers POST /v2/repository/models/{m}/load.
func (s *Server) serveRepositoryLoad(w *statusWriter, r *http.Request, p routeParams) {
	var req struct {
		Parameters map[string]json.RawMessage `json:"parameters"`
	}
	err := s.readJSONBody(w, r, &req)
	var config *string
	var files []string
	for k, raw := range req.Parameters {
		switch {
		case err != nil:
		case k == "config":
			var c string
			if json.Unmarshal(raw, &c) != nil {
				err = invalidf("load model %q: parameter \"config\" must be a string holding a JSON model configuration", p.model)
			}
			config = &c
		case strings.HasPrefix(k, "file:"):
			files = append(files, k)
		}
	}
	slices.Sort(files)
	var cfg string
	if err == nil {
		cfg, err = loadParameters(p.model, config, files)
	}
	if err == nil {
		err = s.catalog.loadModel(p.model, cfg)
	}
	if err != nil {
		writeError(w, loadStatus(err), err.Error())
		return
	}
	writeJSONBytes(w, http.StatusOK, []byte("{}"))
}

// serveRepositoryUnload answers POST /v2/repository/models/{m}/unload.
func (s *Server) serveRepositoryUnload(w *statusWriter, r *http.Request, p routeParams) {
	var req struct {
		Parameters struct {
			UnloadDependents *bool `json:"unload_dependents"`
		} `json:"parameters"`
	}
	err := s.readJSONBody(w, r, &req)
	if err == nil {
		err = s.catalog.unloadModel(p.model)
	}
	if err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	writeJSONBytes(w, http.StatusOK, []byte("{}"))
}

func (g *grpcService) RepositoryIndex(_ context.Context, req *inferencepb.RepositoryIndexRequest) (*inferencepb.RepositoryIndexResponse, error) {
	resp := &inferencepb.RepositoryIndexResponse{}
	for _, m := range g.s.catalog.index(req.GetReady()) {
		resp.Models = append(resp.Models, &inferencepb.RepositoryIndexResponse_ModelIndex{Name: m.Name, Version: m.Version, State: m.State, Reason: m.Reason})
	}
	return resp, nil
}

func (g *grpcService) RepositoryModelLoad(_ context.Context, req *inferencepb.RepositoryModelLoadRequest) (*inferencepb.RepositoryModelLoadResponse, error) {
	name := req.GetModelName()
	var config *string
	var files []string
	for k, v := range req.GetParameters() {
		switch {
		case k == "config":
			c, ok := v.GetParameterChoice().(*inferencepb.ModelRepositoryParameter_StringParam)
			if !ok {
				return nil, toStatus(invalidf("load model %q: parameter \"config\" must be a string_param holding a JSON model configuration", name))
			}
			config = &c.StringParam
		case strings.HasPrefix(k, "file:"):
			files = append(files, k)
		}
	}
	slices.Sort(files)
	cfg, err := loadParameters(name, config, files)
	if err == nil {
		err = g.s.catalog.loadModel(name, cfg)
	}
	if err != nil {
		return nil, loadCode(err)
	}
	return &inferencepb.RepositoryModelLoadResponse{}, nil
}

func (g *grpcService) RepositoryModelUnload(_ context.Context, req *inferencepb.RepositoryModelUnloadRequest) (*inferencepb.RepositoryModelUnloadResponse, error) {
	if p, ok := req.GetParameters()["unload_dependents"]; ok {
		if _, isBool := p.GetParameterChoice().(*inferencepb.ModelRepositoryParameter_BoolParam); !isBool {
			return nil, toStatus(invalidf("unload model %q: parameter \"unload_dependents\" must be a bool_param", req.GetModelName()))
		}
	}
	if err := g.s.catalog.unloadModel(req.GetModelName()); err != nil {
		return nil, toStatus(err)
	}
	return &inferencepb.RepositoryModelUnloadResponse{}, nil
}
