package specs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestEmbeddedCatalogLoads(t *testing.T) {
	c, err := LoadCatalog()
	if err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	if len(c.Requirements) == 0 {
		t.Error("catalog holds no requirements")
	}
	if c.Info.Title == "" || len(c.Info.Sources) == 0 {
		t.Errorf("catalog info incomplete: %+v", c.Info)
	}
	// The ambiguities are the catalog's §5, A-01..A-NN in order.
	for i, a := range c.Info.Ambiguities {
		if want := fmt.Sprintf("A-%02d", i+1); a.ID != want {
			t.Errorf("ambiguity %d is %s, want %s", i, a.ID, want)
		}
	}
}

// Every requirement is in a group of its own kind, and Group returns each
// group whole. The groups are not counted here: an entry dropped or
// duplicated breaks the contiguous numbering below or Validate, and a spec
// labelled with a dropped ID panics when the spec tree is built.
func TestCatalogGroups(t *testing.T) {
	c := MustCatalog()
	count := map[string]int{}
	for _, r := range c.Requirements {
		count[r.Group]++
		ext, _, _ := ParseAdvertised(string(r.Extension)) // model_repository(unload_dependents)
		switch {
		case r.Core() && strings.HasPrefix(r.Group, "OIP-EXT-"):
			t.Errorf("%s: a core requirement in an extension group", r.ID)
		case !r.Core() && ext.Group() != r.Group:
			t.Errorf("%s: extension %s, whose group is %q, in group %s", r.ID, ext, ext.Group(), r.Group)
		}
	}
	total := 0
	for g, n := range count {
		total += n
		if got := len(c.Group(g)); got != n {
			t.Errorf("Group(%q) returned %d requirements, want %d", g, got, n)
		}
	}
	if total != len(c.Requirements) {
		t.Errorf("groups hold %d requirements, the catalog %d", total, len(c.Requirements))
	}
	for _, e := range Extensions {
		if count[e.Group()] == 0 {
			t.Errorf("extension %s: its group %s has no requirement", e, e.Group())
		}
	}
}

// Each group is numbered 001..N without gaps, as in the catalog.
func TestCatalogNumberingContiguous(t *testing.T) {
	c := MustCatalog()
	next := map[string]int{}
	for _, r := range c.Requirements {
		next[r.Group]++
		want := fmt.Sprintf("%s-%03d", r.Group, next[r.Group])
		if r.ID != want {
			t.Errorf("found %s where %s was expected", r.ID, want)
		}
	}
}

// Conflicting or KS-REQ-only strengths were normalized to a single level;
// the entry must point at the ambiguity that explains why.
func TestHedgedStrengthsCiteAmbiguities(t *testing.T) {
	for _, r := range MustCatalog().Requirements {
		s := r.Strength
		if strings.Contains(s, "KS-REQ") || strings.Contains(s, "conflicting") ||
			strings.Contains(s, "-ish") || strings.Contains(s, "unspecified") {
			if !r.Ambiguous() {
				t.Errorf("%s: strength %q but no ambiguities listed", r.ID, s)
			}
		}
	}
}

func TestCatalogGetAndHelpers(t *testing.T) {
	c := MustCatalog()
	r, ok := c.Get("OIP-REST-INFER-006")
	if !ok {
		t.Fatal("OIP-REST-INFER-006 not found")
	}
	if r.Level != LevelMust || !r.Core() || r.Transport != TransportREST || !r.AppliesTo(TransportREST) || r.AppliesTo(TransportGRPC) {
		t.Errorf("OIP-REST-INFER-006 = %+v", r)
	}
	if _, ok := c.Get("OIP-NOPE-001"); ok {
		t.Error("Get found a requirement that does not exist")
	}
	bin, _ := c.Get("OIP-EXT-BIN-002")
	if bin.Core() || bin.Extension != "binary_tensor_data" {
		t.Errorf("OIP-EXT-BIN-002 extension = %q", bin.Extension)
	}
	repo, _ := c.Get("OIP-EXT-REPO-013")
	if repo.Transport != TransportGRPC {
		t.Errorf("OIP-EXT-REPO-013 transport = %q, want grpc", repo.Transport)
	}
	// A hand-built catalog has no index; Get must still work.
	hand := &Catalog{Requirements: []Requirement{{ID: "OIP-GEN-001"}}}
	if _, ok := hand.Get("OIP-GEN-001"); !ok {
		t.Error("Get on a hand-built catalog failed")
	}
}

// The re-grade of issue 8: client rules are lenient, server rules keep the
// class of their level unless a reason says otherwise.
func TestCatalogClasses(t *testing.T) {
	c := MustCatalog()
	for id, want := range map[string]Class{
		"OIP-REST-INFER-010": ClassLenient, // a string dimension accepted
		"OIP-GRPC-RAW-002":   ClassLenient, // mixed raw and typed contents accepted
		"OIP-REST-INFER-006": ClassFail,
		"OIP-REST-ERR-003":   ClassWarning,
		"OIP-GEN-005":        ClassFail, // re-graded: an advertised extension that does not work
	} {
		if r, _ := c.Get(id); r.Class != want {
			t.Errorf("%s: class %q, want %q", id, r.Class, want)
		}
	}
	regraded := 0
	for _, r := range c.Requirements {
		if r.Regrade != "" {
			regraded++
		}
	}
	if regraded == 0 {
		t.Error("no requirement is re-graded")
	}
}

func TestLevelBlocking(t *testing.T) {
	tests := []struct {
		level Level
		want  bool
	}{
		{LevelMust, true},
		{LevelMustSchema, true},
		{LevelShould, false},
		{LevelShouldNot, false},
		{LevelMay, false},
		{LevelImplied, false},
		{LevelInformative, false},
		{Level("must"), false},
	}
	for _, tt := range tests {
		if got := tt.level.Blocking(); got != tt.want {
			t.Errorf("Level(%q).Blocking() = %v, want %v", tt.level, got, tt.want)
		}
	}
}

const validEntry = `
  - id: OIP-REST-INFER-006
    group: OIP-REST-INFER
    level: MUST
    strength: MUST
    transport: rest
    extension: ""
    binds: server
    class: fail
    statement: "the response echoes the request id"
    source: "OIP-REST"
    test: "send id 42"
    ambiguities: [A-09]
`

func TestParseCatalogValid(t *testing.T) {
	c, err := ParseCatalog([]byte("catalog: {title: t}\nrequirements:" + validEntry))
	if err != nil {
		t.Fatalf("ParseCatalog: %v", err)
	}
	r, ok := c.Get("OIP-REST-INFER-006")
	if !ok || !r.Ambiguous() || r.Ambiguities[0] != "A-09" {
		t.Errorf("got %+v, %v", r, ok)
	}
}

func TestParseCatalogRejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // substring of the error
	}{
		{
			name: "duplicate id",
			yaml: "requirements:" + validEntry + validEntry,
			want: "duplicate id (first at requirements[0])",
		},
		{
			name: "slash in id",
			yaml: "requirements:" + strings.Replace(validEntry, "id: OIP-REST-INFER-006", "id: OIP-REST/INFER-006", 1),
			want: "character ginkgo forbids",
		},
		{
			name: "malformed id",
			yaml: "requirements:" + strings.Replace(validEntry, "id: OIP-REST-INFER-006", "id: OIP-REST-INFER-6", 1),
			want: "does not match",
		},
		{
			name: "unknown level",
			yaml: "requirements:" + strings.Replace(validEntry, "level: MUST", "level: REQUIRED", 1),
			want: `unknown level "REQUIRED"`,
		},
		{
			name: "unknown transport",
			yaml: "requirements:" + strings.Replace(validEntry, "transport: rest", "transport: http", 1),
			want: `unknown transport "http"`,
		},
		{
			name: "group mismatch",
			yaml: "requirements:" + strings.Replace(validEntry, "group: OIP-REST-INFER", "group: OIP-REST", 1),
			want: `group "OIP-REST", want "OIP-REST-INFER"`,
		},
		{
			name: "empty statement",
			yaml: "requirements:" + strings.Replace(validEntry, `statement: "the response echoes the request id"`, `statement: ""`, 1),
			want: "empty statement",
		},
		{
			name: "empty source",
			yaml: "requirements:" + strings.Replace(validEntry, `source: "OIP-REST"`, `source: ""`, 1),
			want: "empty source",
		},
		{
			name: "core requirement with extension",
			yaml: "requirements:" + strings.Replace(validEntry, `extension: ""`, `extension: "statistics"`, 1),
			want: `core requirement has extension "statistics"`,
		},
		{
			name: "unlisted ambiguity",
			yaml: "catalog: {ambiguities: [{id: A-01, title: x}]}\nrequirements:" + validEntry,
			want: "ambiguity A-09 is not listed",
		},
		{
			name: "unknown binds",
			yaml: "requirements:" + strings.Replace(validEntry, "binds: server", "binds: anyone", 1),
			want: `binds "anyone", want server, client or both`,
		},
		{
			name: "client rule not lenient",
			yaml: "requirements:" + strings.Replace(validEntry, "binds: server", "binds: client", 1),
			want: "a rule that binds clients, and only such a rule, is lenient",
		},
		{
			name: "regrade without a reason",
			yaml: "requirements:" + strings.Replace(validEntry, "class: fail", "class: warning", 1),
			want: "class warning differs from fail (level MUST) but regrade gives no reason",
		},
		{
			name: "reason without a regrade",
			yaml: "requirements:" + strings.Replace(validEntry, "class: fail", "class: fail\n    regrade: \"why\"", 1),
			want: "regrade given but class fail is what level MUST gives",
		},
		{
			name: "unknown yaml key",
			yaml: "requirements:" + strings.Replace(validEntry, "test:", "tset:", 1),
			want: "field tset not found",
		},
		{
			name: "empty document",
			yaml: "",
			want: "empty document",
		},
		{
			name: "no requirements",
			yaml: "catalog: {title: t}\n",
			want: "no requirements",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCatalog([]byte(tt.yaml))
			if err == nil {
				t.Fatal("ParseCatalog accepted invalid input")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// All problems are reported together, one line each, so a broken file can
// be fixed in one pass.
func TestValidateReportsAllProblems(t *testing.T) {
	bad := strings.NewReplacer(
		"level: MUST", "level: REQUIRED",
		"transport: rest", "transport: http",
		`source: "OIP-REST"`, `source: ""`,
	).Replace(validEntry)
	_, err := ParseCatalog([]byte("requirements:" + bad + validEntry))
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	// unknown level, unknown transport, empty source, duplicate id
	if len(verr.Problems) != 4 {
		t.Errorf("got %d problems, want 4:\n%v", len(verr.Problems), err)
	}
	if lines := strings.Count(err.Error(), "\n"); lines != len(verr.Problems) {
		t.Errorf("error has %d problem lines, want one per problem:\n%v", lines, err)
	}
}

func TestMustCatalogDoesNotPanic(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("MustCatalog panicked: %v", r)
		}
	}()
	if MustCatalog() == nil {
		t.Fatal("MustCatalog returned nil")
	}
}
