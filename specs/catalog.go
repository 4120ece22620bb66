package specs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

//go:embed requirements.yaml
var requirementsYAML []byte

// LabelPrefix prefixes a requirement ID to form the ginkgo label of the
// specs that check it ("req:OIP-REST-INFER-006"), so reports can map a
// result back to its requirement.
const LabelPrefix = "req:"

// Level is a requirement's normalized strength. The catalog's own strength
// text is richer ("MUST (KS-REQ)", "MAY/conflicting", ...); Level reduces it
// to the few values a verdict needs, keeping the weaker reading where the
// sources conflict.
type Level string

// The known levels.
const (
	LevelMust        Level = "MUST"
	LevelMustSchema  Level = "MUST (schema)" // required by a JSON schema
	LevelShould      Level = "SHOULD"
	LevelShouldNot   Level = "SHOULD NOT"
	LevelMay         Level = "MAY"
	LevelImplied     Level = "implied"     // no keyword; follows from schema or examples
	LevelInformative Level = "informative" // descriptive only
)

// Blocking reports whether failing a requirement of this level fails the
// conformance verdict. Everything below MUST is reported but non-blocking,
// since the specs themselves do not make it mandatory.
func (l Level) Blocking() bool {
	return l == LevelMust || l == LevelMustSchema
}

// Class is the finding class of a failed check: what the deviation says
// about the server.
type Class string

// The finding classes.
const (
	// ClassFail: the server broke a rule the spec puts on servers.
	ClassFail Class = "fail"
	// ClassLenient: the server accepted a request that breaks a rule the
	// spec puts on clients. It fails a verdict only under --strict.
	ClassLenient Class = "lenient"
	// ClassWarning: a difference stock clients tolerate (a weaker level, an
	// ambiguity of the spec). It fails a verdict only under --strict.
	ClassWarning Class = "warning"
)

// Known reports whether c is one of the defined classes.
func (c Class) Known() bool { return c == ClassFail || c == ClassLenient || c == ClassWarning }

// LevelClass is the class a failed check of level l gets when nothing else
// is known about it: fail for MUST and MUST (schema), warning otherwise.
func LevelClass(l Level) Class {
	if l.Blocking() {
		return ClassFail
	}
	return ClassWarning
}

// Party is whom a rule binds.
type Party string

// The parties a rule can bind.
const (
	// BindsServer: the rule says what a server answers or does.
	BindsServer Party = "server"
	// BindsClient: the rule says what a client sends; a server that accepts
	// a request breaking it is lenient, not broken.
	BindsClient Party = "client"
	// BindsBoth: the rule fixes the form of every message of its kind,
	// requests and responses alike. What a server sends is graded by the
	// requirement's class; a bad request it accepts is lenient.
	BindsBoth Party = "both"
)

// Known reports whether l is one of the defined levels.
func (l Level) Known() bool {
	switch l {
	case LevelMust, LevelMustSchema, LevelShould, LevelShouldNot, LevelMay, LevelImplied, LevelInformative:
		return true
	}
	return false
}

// What a requirement's transport field can say: one of the two transports,
// both of them, or none (not testable over the wire, e.g. documentation).
const (
	TransportREST Transport = "rest"
	TransportGRPC Transport = "grpc"
	TransportBoth Transport = "both"
	TransportNone Transport = "none"
)

// Requirement is one numbered requirement of the catalog.
type Requirement struct {
	ID        string    `yaml:"id"`
	Group     string    `yaml:"group"` // ID without the trailing -NNN
	Level     Level     `yaml:"level"`
	Strength  string    `yaml:"strength"`  // the catalog's strength text, verbatim
	Transport Transport `yaml:"transport"` // one of the Transport* constants
	// Extension is "" for core requirements, else the name a server lists in
	// server-metadata "extensions" to opt into this requirement.
	Extension Extension `yaml:"extension"`
	// Binds says whom the rule binds: BindsServer, BindsClient or BindsBoth.
	Binds Party `yaml:"binds"`
	// Class is the finding class of a failed check (see Class). It follows
	// the level unless Regrade says why not.
	Class Class `yaml:"class"`
	// Regrade is the one-line reason why Class differs from LevelClass of
	// the level; empty when it does not.
	Regrade     string   `yaml:"regrade"`
	Statement   string   `yaml:"statement"`
	Source      string   `yaml:"source"`
	Test        string   `yaml:"test"`
	Ambiguities []string `yaml:"ambiguities"` // catalog §5 items, e.g. "A-09"
}

// Core reports whether the requirement belongs to the core protocol rather
// than to an optional extension.
func (r Requirement) Core() bool { return r.Extension == "" }

// Ambiguous reports whether the sources are unclear or in conflict about
// this requirement, so a failure deserves a closer look before blaming the
// server.
func (r Requirement) Ambiguous() bool { return len(r.Ambiguities) > 0 }

// AppliesTo reports whether the requirement is checked over the given
// transport (TransportREST or TransportGRPC).
func (r Requirement) AppliesTo(transport Transport) bool {
	return r.Transport == TransportBoth || r.Transport == transport
}

// Source is one document the catalog was derived from, pinned to a commit.
type Source struct {
	Key    string   `yaml:"key"` // short name used in Requirement.Source
	Repo   string   `yaml:"repo"`
	Commit string   `yaml:"commit"`
	Date   string   `yaml:"date,omitempty"`
	Paths  []string `yaml:"paths"`
}

// Ambiguity is an item of the catalog's list of spec ambiguities and
// implementation divergences.
type Ambiguity struct {
	ID    string `yaml:"id"`
	Title string `yaml:"title"`
}

// CatalogInfo describes the catalog as a whole.
type CatalogInfo struct {
	Title       string      `yaml:"title"`
	Sources     []Source    `yaml:"sources"`
	Ambiguities []Ambiguity `yaml:"ambiguities"`
}

// Catalog is the parsed requirement catalog.
type Catalog struct {
	Info         CatalogInfo   `yaml:"catalog"`
	Requirements []Requirement `yaml:"requirements"`

	byID map[string]int // built by ParseCatalog; nil for hand-built values
}

var (
	idPattern        = regexp.MustCompile(`^OIP-[A-Z]+(-[A-Z]+)*-[0-9]{3}$`)
	ambiguityPattern = regexp.MustCompile(`^A-[0-9]{2}$`)
)

// ginkgoForbidden are the characters ginkgo rejects in labels; IDs become
// labels, so they must not contain any of them.
const ginkgoForbidden = "&|!,()/"

// LoadCatalog parses and validates the embedded requirements.yaml.
func LoadCatalog() (*Catalog, error) {
	c, err := ParseCatalog(requirementsYAML)
	if err != nil {
		return nil, fmt.Errorf("load embedded requirements.yaml: %w", err)
	}
	return c, nil
}

// MustCatalog is LoadCatalog for package-level variables. It panics only if
// the embedded data is invalid, which is a programming error caught by this
// package's tests.
func MustCatalog() *Catalog {
	c, err := LoadCatalog()
	if err != nil {
		panic(err)
	}
	return c
}

// ParseCatalog decodes a catalog from YAML and validates it.
func ParseCatalog(data []byte) (*Catalog, error) {
	var c Catalog
	if err := decodeStrict(data, &c); err != nil {
		return nil, fmt.Errorf("parse catalog: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.byID = make(map[string]int, len(c.Requirements))
	for i, r := range c.Requirements {
		c.byID[r.ID] = i
	}
	return &c, nil
}

// Validate checks the catalog's internal consistency and returns a
// *ValidationError listing every problem, one per line, or nil.
func (c *Catalog) Validate() error {
	p := problems{what: "catalog"}
	if len(c.Requirements) == 0 {
		p.addf("no requirements")
	}
	known := make(map[string]bool, len(c.Info.Ambiguities))
	for i, a := range c.Info.Ambiguities {
		if !ambiguityPattern.MatchString(a.ID) {
			p.addf("catalog.ambiguities[%d]: ID %q does not match A-NN", i, a.ID)
		}
		if known[a.ID] {
			p.addf("catalog.ambiguities[%d]: duplicate ID %q", i, a.ID)
		}
		known[a.ID] = true
	}
	seen := make(map[string]int, len(c.Requirements))
	for i, r := range c.Requirements {
		at := fmt.Sprintf("requirements[%d] %q", i, r.ID)
		validID := false
		switch {
		case r.ID == "":
			p.addf("requirements[%d]: missing id", i)
		case strings.ContainsAny(r.ID, ginkgoForbidden):
			p.addf("%s: id contains a character ginkgo forbids in labels (one of %q)", at, ginkgoForbidden)
		case !idPattern.MatchString(r.ID):
			p.addf("%s: id does not match %s", at, idPattern)
		default:
			validID = true
		}
		if j, dup := seen[r.ID]; dup && r.ID != "" {
			p.addf("%s: duplicate id (first at requirements[%d])", at, j)
		} else {
			seen[r.ID] = i
		}
		if validID {
			if want := r.ID[:len(r.ID)-4]; r.Group != want {
				p.addf("%s: group %q, want %q", at, r.Group, want)
			}
			// Extension requirements are gated on an advertised name and
			// core ones must never be, or the suite would skip core checks.
			ext := strings.HasPrefix(r.ID, "OIP-EXT-")
			if ext && r.Extension == "" {
				p.addf("%s: extension requirement without an extension name", at)
			}
			if !ext && r.Extension != "" {
				p.addf("%s: core requirement has extension %q", at, r.Extension)
			}
			if _, _, known := ParseAdvertised(string(r.Extension)); ext && r.Extension != "" && !known {
				p.addf("%s: extension %q is not in the vocabulary of specs.Extensions", at, r.Extension)
			}
		}
		if !r.Level.Known() {
			p.addf("%s: unknown level %q", at, r.Level)
		}
		switch r.Binds {
		case BindsServer, BindsClient, BindsBoth:
		default:
			p.addf("%s: binds %q, want server, client or both", at, r.Binds)
		}
		switch {
		case !r.Class.Known():
			p.addf("%s: class %q, want fail, lenient or warning", at, r.Class)
		case (r.Binds == BindsClient) != (r.Class == ClassLenient):
			p.addf("%s: class %s with binds %s: a rule that binds clients, and only such a rule, is lenient", at, r.Class, r.Binds)
		case r.Level.Known() && r.Class != LevelClass(r.Level) && strings.TrimSpace(r.Regrade) == "":
			p.addf("%s: class %s differs from %s (level %s) but regrade gives no reason", at, r.Class, LevelClass(r.Level), r.Level)
		case r.Level.Known() && r.Class == LevelClass(r.Level) && r.Regrade != "":
			p.addf("%s: regrade given but class %s is what level %s gives", at, r.Class, r.Level)
		}
		switch r.Transport {
		case TransportREST, TransportGRPC, TransportBoth, TransportNone:
		default:
			p.addf("%s: unknown transport %q", at, r.Transport)
		}
		if strings.TrimSpace(r.Statement) == "" {
			p.addf("%s: empty statement", at)
		}
		if strings.TrimSpace(r.Source) == "" {
			p.addf("%s: empty source", at)
		}
		for _, a := range r.Ambiguities {
			switch {
			case !ambiguityPattern.MatchString(a):
				p.addf("%s: ambiguity %q does not match A-NN", at, a)
			case len(known) > 0 && !known[a]:
				p.addf("%s: ambiguity %s is not listed in catalog.ambiguities", at, a)
			}
		}
	}
	return p.err()
}

// Get returns the requirement with the given ID.
func (c *Catalog) Get(id string) (Requirement, bool) {
	if c.byID != nil {
		if i, ok := c.byID[id]; ok {
			return c.Requirements[i], true
		}
		return Requirement{}, false
	}
	for _, r := range c.Requirements {
		if r.ID == id {
			return r, true
		}
	}
	return Requirement{}, false
}

// Group returns the requirements of one group (e.g. "OIP-REST-INFER") in
// catalog order.
func (c *Catalog) Group(group string) []Requirement {
	var out []Requirement
	for _, r := range c.Requirements {
		if r.Group == group {
			out = append(out, r)
		}
	}
	return out
}

// ValidationError lists every problem found in one data set. All problems
// are collected before failing so that one run shows everything that needs
// fixing in a YAML file, not just the first mistake.
type ValidationError struct {
	// What names the data set: "catalog", "fixtures" or "datatypes".
	What string
	// Problems holds one line per problem.
	Problems []string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s (%d problem(s)):\n  %s",
		e.What, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// problems accumulates validation findings for a ValidationError.
type problems struct {
	what  string
	lines []string
}

func (p *problems) addf(format string, args ...any) {
	p.lines = append(p.lines, fmt.Sprintf(format, args...))
}

// err returns nil when nothing was found, so callers can return it directly.
func (p *problems) err() error {
	if len(p.lines) == 0 {
		return nil
	}
	return &ValidationError{What: p.what, Problems: p.lines}
}

// decodeStrict decodes a single YAML document and rejects unknown keys: a
// misspelt field name would otherwise be dropped silently and the entry
// would look valid but empty.
func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty document")
		}
		return err
	}
	return nil
}
