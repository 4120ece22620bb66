package conformance

import (
	"testing"

	"github.com/oipkit/oipkit/specs"
)

func TestParseFeatures(t *testing.T) {
	fs, err := ParseFeatures(" binary_tensor_data ,")
	if err != nil || len(fs) != 1 || fs[0] != specs.ExtBinaryTensorData {
		t.Errorf("ParseFeatures = %v, %v; want [binary_tensor_data]", fs, err)
	}
	if fs, err := ParseFeatures(""); err != nil || fs == nil || len(fs) != 0 {
		t.Errorf("ParseFeatures(\"\") = %#v, %v; want an explicit empty set", fs, err)
	}
	if _, err := ParseFeatures("binary_tensor_data,nope"); err == nil {
		t.Error("ParseFeatures(nope): no error")
	}
}

func TestProfilesAndWaiversLoad(t *testing.T) {
	ps, err := Profiles()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range ps {
		names[p.Name] = true
	}
	for _, want := range []string{"OIP-REST-CORE", "OIP-GRPC-CORE", "OIP-REST-BINARY"} {
		if !names[want] {
			t.Errorf("profile %s is missing", want)
		}
	}
	if _, err := Waivers(); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsNormalize(t *testing.T) {
	if _, err := (Options{}).normalize(); err == nil {
		t.Error("Options{} normalized without a target")
	}
	o, err := Options{HTTPURL: "127.0.0.1:8000/"}.normalize()
	if err != nil || o.HTTPURL != "http://127.0.0.1:8000" || o.Timeout != DefaultTimeout {
		t.Errorf("normalize = %+v, %v", o, err)
	}
	if _, err := (Options{GRPCAddr: "x:1", Profiles: []string{"NOPE"}}).normalize(); err == nil {
		t.Error("unknown profile accepted")
	}
}
