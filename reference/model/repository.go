package model

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/oipkit/oipkit/oip"
)

// ErrNotFound reports an unknown model or an unknown version of a known model.
var ErrNotFound = errors.New("not found")

// Repository holds the loaded models by name and version. It is safe for
// concurrent use.
type Repository struct {
	mu     sync.RWMutex
	models map[string]*entry
}

// entry is every loaded version of one model name.
type entry struct {
	byVersion map[string]Model
	versions  []string // non-numeric lexically, then numeric ascending (see versionLess)
}

// NewRepository returns an empty repository.
func NewRepository() *Repository {
	return &Repository{models: make(map[string]*entry)}
}

// Add loads m under the name and the single version its metadata declares.
// Adding a name and version that are already loaded is an error.
func (r *Repository) Add(m Model) error {
	md := m.Metadata()
	if md.Name == "" {
		return errors.New("add model: empty name")
	}
	if len(md.Versions) != 1 || md.Versions[0] == "" {
		return fmt.Errorf("add model %q: metadata must list exactly one non-empty version, got %q", md.Name, md.Versions)
	}
	v := md.Versions[0]
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.models[md.Name]
	if e == nil {
		e = &entry{byVersion: make(map[string]Model)}
		r.models[md.Name] = e
	}
	if _, dup := e.byVersion[v]; dup {
		return fmt.Errorf("add model %q: version %q already loaded", md.Name, v)
	}
	e.byVersion[v] = m
	e.versions = append(e.versions, v)
	sort.Slice(e.versions, func(i, j int) bool { return versionLess(e.versions[i], e.versions[j]) })
	return nil
}

// Lookup returns the model called name at version, and the version it
// resolved to. An empty version selects the highest numeric version (or, for
// a model without numeric versions, the lexically greatest one). Errors wrap
// ErrNotFound.
func (r *Repository) Lookup(name, version string) (Model, string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e := r.models[name]
	if e == nil {
		return nil, "", fmt.Errorf("model %q: %w", name, ErrNotFound)
	}
	if version == "" {
		version = e.versions[len(e.versions)-1]
	}
	m, ok := e.byVersion[version]
	if !ok {
		return nil, "", fmt.Errorf("model %q version %q: %w", name, version, ErrNotFound)
	}
	return m, version, nil
}

// Metadata returns the metadata of name at version (empty = as for Lookup),
// with Versions listing every loaded version of the name. Errors wrap
// ErrNotFound.
func (r *Repository) Metadata(name, version string) (oip.ModelMetadata, error) {
	m, _, err := r.Lookup(name, version)
	if err != nil {
		return oip.ModelMetadata{}, err
	}
	md := m.Metadata()
	md.Inputs = cloneTensorMetadata(md.Inputs)
	md.Outputs = cloneTensorMetadata(md.Outputs)
	md.Properties = maps.Clone(md.Properties)
	r.mu.RLock()
	md.Versions = slices.Clone(r.models[name].versions)
	r.mu.RUnlock()
	return md, nil
}

// Names lists the loaded model names in lexical order.
func (r *Repository) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.models))
	for n := range r.models {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Versions lists the loaded versions of name in versionLess order, or nil
// for an unknown name.
func (r *Repository) Versions(name string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e := r.models[name]; e != nil {
		return slices.Clone(e.versions)
	}
	return nil
}

// versionLess orders non-numeric versions lexically before numeric ones,
// which sort numerically, so the default version is always the last one.
func versionLess(a, b string) bool {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return na < nb
	case errA == nil:
		return false // numeric versions sort last so the highest is at the end
	case errB == nil:
		return true
	}
	return a < b
}

// cloneTensorMetadata deep-copies metadata so callers cannot alter a model's.
func cloneTensorMetadata(ts []oip.TensorMetadata) []oip.TensorMetadata {
	out := make([]oip.TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = oip.TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: slices.Clone(t.Shape)}
	}
	return out
}

// Remove unloads every version of name and reports whether it was loaded.
// Requests already running on a removed model finish normally.
func (r *Repository) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.models[name]
	delete(r.models, name)
	return ok
}
