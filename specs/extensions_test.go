package specs

import "testing"

func TestParseAdvertised(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ext     Extension
		capab   string
		wantOK  bool
		comment string
	}{
		{"binary_tensor_data", ExtBinaryTensorData, "", true, "plain name"},
		{" statistics ", ExtStatistics, "", true, "surrounding space"},
		{"model_repository(unload_dependents)", ExtModelRepository, "unload_dependents", true, "Triton capability"},
		{"sequence(string_id)", ExtSequence, "string_id", true, "Triton capability"},
		{"model_repository_extension", "", "", false, "KServe's name is not Triton's"},
		{"sequence(", "", "", false, "unclosed"},
		{"sequence()", "", "", false, "empty capability"},
		{"sequence(a(b))", "", "", false, "nested"},
		{"", "", "", false, "empty"},
	} {
		ext, c, ok := ParseAdvertised(tc.in)
		if ext != tc.ext || c != tc.capab || ok != tc.wantOK {
			t.Errorf("ParseAdvertised(%q) (%s) = %q, %q, %v; want %q, %q, %v", tc.in, tc.comment, ext, c, ok, tc.ext, tc.capab, tc.wantOK)
		}
	}
}

func TestExtensionVocabulary(t *testing.T) {
	for _, e := range Extensions {
		if e.Group() == "" {
			t.Errorf("extension %q has no requirement group", e)
		}
		if got, err := ParseExtension(string(e)); err != nil || got != e {
			t.Errorf("ParseExtension(%q) = %q, %v", e, got, err)
		}
	}
	if _, err := ParseExtension("nope"); err == nil {
		t.Error("ParseExtension accepted an unknown name")
	}
	// Every extension group of the catalog belongs to an extension.
	c := MustCatalog()
	groups := map[string]bool{}
	for _, e := range Extensions {
		groups[e.Group()] = true
	}
	for _, r := range c.Requirements {
		if !r.Core() && !groups[r.Group] {
			t.Errorf("%s: group %s has no extension in the vocabulary", r.ID, r.Group)
		}
	}
}
