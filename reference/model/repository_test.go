package model

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// stub is a model whose metadata is given; it never runs.
type stub struct{ md oip.ModelMetadata }

func (s stub) Metadata() oip.ModelMetadata { return s.md }
func (s stub) Infer(context.Context, map[string]tensor.Tensor, oip.Parameters) ([]tensor.Tensor, error) {
	return nil, nil
}

func stubVersion(name, version string) stub {
	return stub{md: oip.ModelMetadata{Name: name, Versions: []string{version}, Platform: Platform}}
}

func TestRepositoryDefaultVersionIsHighestNumeric(t *testing.T) {
	r := NewRepository()
	for _, v := range []string{"2", "10", "beta", "1", "alpha"} {
		if err := r.Add(stubVersion("m", v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, v, err := r.Lookup("m", ""); err != nil || v != "10" {
		t.Fatalf("default version = %q, %v; want 10 (numeric, not lexical)", v, err)
	}
	md, err := r.Metadata("m", "beta")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"alpha", "beta", "1", "2", "10"}; !slices.Equal(md.Versions, want) {
		t.Fatalf("versions = %q, want %q", md.Versions, want)
	}
	if got := r.Versions("m"); !slices.Equal(got, md.Versions) {
		t.Fatalf("Versions = %q", got)
	}

	r2 := NewRepository()
	for _, v := range []string{"a", "c", "b"} {
		if err := r2.Add(stubVersion("n", v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, v, _ := r2.Lookup("n", ""); v != "c" {
		t.Fatalf("default of non-numeric versions = %q, want c", v)
	}
}

func TestRepositoryNotFound(t *testing.T) {
	r := Fixtures(fixture.Config{})
	for _, c := range [][2]string{{"nope", ""}, {"nope", "1"}, {"versioned", "3"}, {"add_sub", "2"}, {"Add_Sub", ""}} {
		if _, _, err := r.Lookup(c[0], c[1]); !errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup(%q, %q) = %v, want ErrNotFound", c[0], c[1], err)
		}
		if _, err := r.Metadata(c[0], c[1]); !errors.Is(err, ErrNotFound) {
			t.Errorf("Metadata(%q, %q) = %v, want ErrNotFound", c[0], c[1], err)
		}
	}
	if r.Versions("nope") != nil {
		t.Error("Versions of an unknown model is not nil")
	}
}

func TestRepositoryAddRejects(t *testing.T) {
	r := NewRepository()
	if err := r.Add(stubVersion("m", "1")); err != nil {
		t.Fatal(err)
	}
	bad := []Model{
		stubVersion("m", "1"), // duplicate
		stubVersion("", "1"),
		stubVersion("m", ""),
		stub{md: oip.ModelMetadata{Name: "m"}},
		stub{md: oip.ModelMetadata{Name: "m", Versions: []string{"3", "4"}}},
	}
	for _, m := range bad {
		if err := r.Add(m); err == nil {
			t.Errorf("Add(%+v) succeeded", m.Metadata())
		}
	}
}

func TestRepositoryMetadataIsACopy(t *testing.T) {
	r := Fixtures(fixture.Config{})
	md, err := r.Metadata("add_sub", "")
	if err != nil {
		t.Fatal(err)
	}
	md.Inputs[0].Shape[1] = 99
	md.Inputs[0].Name = "X"
	md2, _ := r.Metadata("add_sub", "1")
	if md2.Inputs[0].Shape[1] != 16 || md2.Inputs[0].Name != "INPUT0" {
		t.Fatalf("caller changed the model's metadata: %+v", md2.Inputs[0])
	}
	if want := []string{"accumulate", "add_sub", "classifier"}; !slices.Equal(r.Names()[:3], want) {
		t.Fatalf("Names()[:3] = %q, want sorted %q", r.Names()[:3], want)
	}
}
