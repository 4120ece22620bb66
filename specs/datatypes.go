package specs

import (
	_ "embed"
	"fmt"
	"regexp"
)

//go:embed datatypes.yaml
var datatypesYAML []byte

// Datatype is one OIP tensor datatype and how its elements travel on each
// wire format.
type Datatype struct {
	Name string `yaml:"name"` // e.g. "FP32", exactly as sent on the wire
	// Size is the element size in bytes in binary/raw form; 0 means variable
	// (BYTES, whose elements are length-prefixed).
	Size int    `yaml:"size"`
	JSON string `yaml:"json"` // how elements appear in REST JSON data
	// GRPCContentsField is the InferTensorContents field for typed gRPC
	// contents, or "" when the type can only travel as raw content.
	GRPCContentsField string `yaml:"grpc_contents_field"`
	Raw               string `yaml:"raw"` // binary/raw element encoding
	// InOIPTables is false for types missing from the OIP-REST/OIP-GRPC
	// datatype tables (BF16), which servers may legitimately not support.
	InOIPTables bool   `yaml:"in_oip_tables"`
	Notes       string `yaml:"notes,omitempty"`
}

// Variable reports whether elements have no fixed size.
func (d Datatype) Variable() bool { return d.Size == 0 }

var datatypeNamePattern = regexp.MustCompile(`^[A-Z][A-Z0-9]*$`)

// LoadDatatypes parses and validates the embedded datatypes.yaml.
func LoadDatatypes() ([]Datatype, error) {
	d, err := ParseDatatypes(datatypesYAML)
	if err != nil {
		return nil, fmt.Errorf("load embedded datatypes.yaml: %w", err)
	}
	return d, nil
}

// ParseDatatypes decodes a datatype table ("datatypes:" list) from YAML and
// validates it.
func ParseDatatypes(data []byte) ([]Datatype, error) {
	var doc struct {
		Datatypes []Datatype `yaml:"datatypes"`
	}
	if err := decodeStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("parse datatypes: %w", err)
	}
	if err := validateDatatypes(doc.Datatypes); err != nil {
		return nil, err
	}
	return doc.Datatypes, nil
}

func validateDatatypes(dts []Datatype) error {
	p := problems{what: "datatypes"}
	if len(dts) == 0 {
		p.addf("no datatypes")
	}
	seen := map[string]bool{}
	for i, d := range dts {
		at := fmt.Sprintf("datatypes[%d] %q", i, d.Name)
		if !datatypeNamePattern.MatchString(d.Name) {
			p.addf("%s: name must be upper-case letters and digits", at)
		}
		if seen[d.Name] {
			p.addf("%s: duplicate name", at)
		}
		seen[d.Name] = true
		switch d.Size {
		case 0, 1, 2, 4, 8:
		default:
			p.addf("%s: size %d is not 0 (variable), 1, 2, 4 or 8", at, d.Size)
		}
		if d.JSON == "" || d.Raw == "" {
			p.addf("%s: json and raw descriptions are required", at)
		}
	}
	return p.err()
}
