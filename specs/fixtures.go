package specs

import (
	_ "embed"
	"fmt"
)

//go:embed fixtures.yaml
var fixturesYAML []byte

// Fixture kinds.
const (
	// KindCore fixtures are required for a full core verdict.
	KindCore = "core"
	// KindExtension fixtures are needed only when the server advertises
	// Fixture.Extension.
	KindExtension = "extension"
	// KindReferenceExtra fixtures ship with the reference server for the
	// load generator and demos; they are not part of the contract.
	KindReferenceExtra = "reference-extra"
)

// FixtureTensor is an input or output of a fixture model.
type FixtureTensor struct {
	Name     string  `yaml:"name"`
	Datatype string  `yaml:"datatype"` // OIP datatype name, e.g. "INT32"
	Shape    []int64 `yaml:"shape"`    // -1 marks a variable dimension
}

// FixtureParameter is a request parameter a fixture model understands.
type FixtureParameter struct {
	Name        string `yaml:"name"`
	Type        string `yaml:"type"`
	Description string `yaml:"description"`
}

// Fixture is one model of the fixture contract. The suite computes expected
// outputs from Semantics, so a fixture's behaviour is fully determined by
// its inputs.
type Fixture struct {
	Name      string    `yaml:"name"`
	Kind      string    `yaml:"kind"`                // one of the Kind* constants
	Extension Extension `yaml:"extension,omitempty"` // gating extension name
	// Versions lists the versions that must be loaded; empty for
	// unversioned fixtures.
	Versions   []string           `yaml:"versions,omitempty"`
	Inputs     []FixtureTensor    `yaml:"inputs,omitempty"`
	Outputs    []FixtureTensor    `yaml:"outputs,omitempty"`
	Labels     []string           `yaml:"labels,omitempty"` // class labels by index
	Parameters []FixtureParameter `yaml:"parameters,omitempty"`
	Semantics  string             `yaml:"semantics"`
	// Optional fixtures may be absent without affecting the verdict; specs
	// that need them are tested only where they are deployed.
	Optional bool `yaml:"optional,omitempty"`
}

// LoadFixtures parses and validates the embedded fixtures.yaml.
func LoadFixtures() ([]Fixture, error) {
	f, err := ParseFixtures(fixturesYAML)
	if err != nil {
		return nil, fmt.Errorf("load embedded fixtures.yaml: %w", err)
	}
	return f, nil
}

// ParseFixtures decodes a fixture list ("fixtures:") from YAML and validates
// it, checking tensor datatypes against the embedded datatype table.
func ParseFixtures(data []byte) ([]Fixture, error) {
	var doc struct {
		Fixtures []Fixture `yaml:"fixtures"`
	}
	if err := decodeStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("parse fixtures: %w", err)
	}
	dts, err := LoadDatatypes()
	if err != nil {
		return nil, fmt.Errorf("validate fixtures: %w", err)
	}
	known := make(map[string]bool, len(dts))
	for _, d := range dts {
		known[d.Name] = true
	}
	if err := validateFixtures(doc.Fixtures, known); err != nil {
		return nil, err
	}
	return doc.Fixtures, nil
}

func validateFixtures(fs []Fixture, datatypes map[string]bool) error {
	p := problems{what: "fixtures"}
	if len(fs) == 0 {
		p.addf("no fixtures")
	}
	seen := map[string]bool{}
	for i, f := range fs {
		at := fmt.Sprintf("fixtures[%d] %q", i, f.Name)
		if f.Name == "" {
			p.addf("fixtures[%d]: missing name", i)
		}
		if seen[f.Name] {
			p.addf("%s: duplicate name", at)
		}
		seen[f.Name] = true
		switch f.Kind {
		case KindCore, KindReferenceExtra:
			if f.Extension != "" {
				p.addf("%s: kind %q must not name an extension", at, f.Kind)
			}
		case KindExtension:
			if f.Extension == "" {
				p.addf("%s: extension fixture without an extension name", at)
			} else if !f.Extension.Known() {
				p.addf("%s: extension %q is not in the vocabulary of specs.Extensions", at, f.Extension)
			}
		default:
			p.addf("%s: unknown kind %q", at, f.Kind)
		}
		if f.Semantics == "" {
			p.addf("%s: empty semantics", at)
		}
		checkTensors(&p, at+" inputs", f.Inputs, datatypes)
		checkTensors(&p, at+" outputs", f.Outputs, datatypes)
	}
	return p.err()
}

func checkTensors(p *problems, at string, ts []FixtureTensor, datatypes map[string]bool) {
	seen := map[string]bool{}
	for i, t := range ts {
		if t.Name == "" {
			p.addf("%s[%d]: missing name", at, i)
		}
		if seen[t.Name] {
			p.addf("%s[%d]: duplicate tensor name %q", at, i, t.Name)
		}
		seen[t.Name] = true
		if !datatypes[t.Datatype] {
			p.addf("%s[%d] %q: unknown datatype %q", at, i, t.Name, t.Datatype)
		}
		for _, d := range t.Shape {
			if d < -1 {
				p.addf("%s[%d] %q: dimension %d is below -1", at, i, t.Name, d)
			}
		}
	}
}
