package specs

import (
	"slices"
	"strings"
	"testing"
)

func TestEmbeddedFixtures(t *testing.T) {
	fs, err := LoadFixtures()
	if err != nil {
		t.Fatalf("LoadFixtures: %v", err)
	}
	byName := map[string]Fixture{}
	for _, f := range fs {
		byName[f.Name] = f
	}

	addSub, ok := byName["add_sub"]
	if !ok {
		t.Fatal("add_sub missing")
	}
	if addSub.Kind != KindCore || len(addSub.Inputs) != 2 || len(addSub.Outputs) != 2 {
		t.Errorf("add_sub = %+v", addSub)
	}
	if got := addSub.Inputs[0]; got.Name != "INPUT0" || got.Datatype != "INT32" || !slices.Equal(got.Shape, []int64{-1, 16}) {
		t.Errorf("add_sub INPUT0 = %+v", got)
	}

	versioned, ok := byName["versioned"]
	if !ok {
		t.Fatal("versioned missing")
	}
	if !slices.Equal(versioned.Versions, []string{"1", "2"}) {
		t.Errorf("versioned versions = %v, want [1 2]", versioned.Versions)
	}

	// The contract's identity_<t> expands to 13 required models plus an
	// optional identity_bf16.
	var required []string
	for _, f := range fs {
		if !strings.HasPrefix(f.Name, "identity_") {
			continue
		}
		want := strings.ToUpper(strings.TrimPrefix(f.Name, "identity_"))
		if f.Inputs[0].Datatype != want || f.Outputs[0].Datatype != want {
			t.Errorf("%s carries %s/%s, want %s", f.Name, f.Inputs[0].Datatype, f.Outputs[0].Datatype, want)
		}
		if f.Optional {
			if f.Name != "identity_bf16" {
				t.Errorf("%s is optional; only identity_bf16 should be", f.Name)
			}
			continue
		}
		required = append(required, f.Name)
	}
	if len(required) != 13 {
		t.Errorf("%d required identity models, want 13: %v", len(required), required)
	}
	if bf16, ok := byName["identity_bf16"]; !ok || !bf16.Optional {
		t.Errorf("identity_bf16 missing or not optional: %+v", bf16)
	}

	for name, ext := range map[string]Extension{
		"classifier":   "classification",
		"repo_target":  "model_repository",
		"broken":       "model_repository",
		"stream_count": "sequence",
	} {
		f, ok := byName[name]
		if !ok || f.Kind != KindExtension || f.Extension != ext {
			t.Errorf("%s: got %+v, want extension fixture for %s", name, f, ext)
		}
	}
	if c := byName["classifier"]; !slices.Equal(c.Labels, []string{"a", "b", "c", "d"}) {
		t.Errorf("classifier labels = %v", c.Labels)
	}
	delay, ok := byName["delay"]
	if !ok || delay.Kind != KindReferenceExtra || len(delay.Parameters) != 1 || delay.Parameters[0].Name != "delay_ms" {
		t.Errorf("delay = %+v", delay)
	}
}

func TestParseFixturesRejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"unknown datatype", `fixtures: [{name: m, kind: core, semantics: s, inputs: [{name: I, datatype: FLOAT, shape: [1]}]}]`, `unknown datatype "FLOAT"`},
		{"bad dimension", `fixtures: [{name: m, kind: core, semantics: s, inputs: [{name: I, datatype: FP32, shape: [-2]}]}]`, "below -1"},
		{"duplicate", `fixtures: [{name: m, kind: core, semantics: s}, {name: m, kind: core, semantics: s}]`, "duplicate name"},
		{"unknown kind", `fixtures: [{name: m, kind: demo, semantics: s}]`, `unknown kind "demo"`},
		{"extension without name", `fixtures: [{name: m, kind: extension, semantics: s}]`, "without an extension name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFixtures([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v does not mention %q", err, tt.want)
			}
		})
	}
}
