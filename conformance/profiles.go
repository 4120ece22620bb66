package conformance

import (
	"bytes"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/specs"
)

// Profile is a named set of requirement groups checked over one transport,
// loaded from specs/profiles.yaml.
type Profile struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Transport   Transport `yaml:"transport"`
	Features    []Feature `yaml:"features"`
	Groups      []string  `yaml:"groups"`
}

// Includes reports whether requirement r belongs to the profile: its group is
// listed and it applies to the profile's transport.
func (p Profile) Includes(r specs.Requirement) bool {
	return slices.Contains(p.Groups, r.Group) && r.AppliesTo(p.Transport)
}

// Waiver records why a requirement has no spec.
type Waiver struct {
	ID     string `yaml:"id"`
	Reason string `yaml:"reason"`
}

// Profiles returns the profiles of specs/profiles.yaml.
func Profiles() ([]Profile, error) {
	var doc struct {
		Profiles []Profile `yaml:"profiles"`
	}
	if err := decodeYAML(specs.ProfilesYAML, &doc); err != nil {
		return nil, fmt.Errorf("parse profiles.yaml: %w", err)
	}
	seen := map[string]bool{}
	for _, p := range doc.Profiles {
		switch {
		case p.Name == "" || seen[p.Name]:
			return nil, fmt.Errorf("profiles.yaml: empty or duplicate name %q", p.Name)
		case p.Transport != TransportREST && p.Transport != TransportGRPC:
			return nil, fmt.Errorf("profile %s: unknown transport %q", p.Name, p.Transport)
		case len(p.Groups) == 0:
			return nil, fmt.Errorf("profile %s: no groups", p.Name)
		}
		seen[p.Name] = true
		for _, f := range p.Features {
			if _, err := ParseFeature(string(f)); err != nil {
				return nil, fmt.Errorf("profile %s: %w", p.Name, err)
			}
		}
		for _, g := range p.Groups {
			if len(engine.Catalog().Group(g)) == 0 {
				return nil, fmt.Errorf("profile %s: unknown requirement group %q", p.Name, g)
			}
		}
	}
	return doc.Profiles, nil
}

// Waivers returns the waivers of specs/waivers.yaml, keyed by requirement ID.
func Waivers() (map[string]Waiver, error) {
	var doc struct {
		Waivers []Waiver `yaml:"waivers"`
	}
	if err := decodeYAML(specs.WaiversYAML, &doc); err != nil {
		return nil, fmt.Errorf("parse waivers.yaml: %w", err)
	}
	out := make(map[string]Waiver, len(doc.Waivers))
	for _, w := range doc.Waivers {
		if _, ok := engine.Catalog().Get(w.ID); !ok {
			return nil, fmt.Errorf("waivers.yaml: unknown requirement %q", w.ID)
		}
		if w.Reason == "" {
			return nil, fmt.Errorf("waivers.yaml: %s has no reason", w.ID)
		}
		if _, dup := out[w.ID]; dup {
			return nil, fmt.Errorf("waivers.yaml: duplicate waiver for %s", w.ID)
		}
		out[w.ID] = w
	}
	return out, nil
}

func findProfile(name string) (Profile, error) {
	ps, err := Profiles()
	if err != nil {
		return Profile{}, err
	}
	for _, p := range ps {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("unknown profile %q", name)
}

func decodeYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}
