package conformance

import (
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

func TestReqRejectsUnknownIDs(t *testing.T) {
	if got := Req("OIP-REST-INFER-006"); len(got) != 1 || got[0] != "req:OIP-REST-INFER-006" {
		t.Errorf("Req(OIP-REST-INFER-006) = %v, want [req:OIP-REST-INFER-006]", got)
	}
	for name, f := range map[string]func(){
		"unknown requirement": func() { Req("OIP-REST-INFER-999") },
		"no requirement":      func() { Req() },
		"unknown feature":     func() { Needs(Feature("teleportation")) },
		"unknown transport":   func() { Over(Transport("carrier-pigeon")) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic; labels outside the vocabulary must fail tree construction")
				}
			}()
			f()
		})
	}
}

func TestLabelFilterSelectsByFeatureAndTransport(t *testing.T) {
	cases := []struct {
		features   []Feature
		transports []Transport
		labels     []string
		want       bool
	}{
		{nil, []Transport{TransportREST}, []string{"transport:rest", "req:X"}, true},
		{nil, []Transport{TransportREST}, []string{"transport:grpc"}, false},
		{nil, []Transport{TransportREST}, []string{"transport:rest", "feature:binary_tensor_data"}, false},
		{[]Feature{FeatureBinaryTensorData}, []Transport{TransportREST, TransportGRPC}, []string{"transport:rest", "feature:binary_tensor_data"}, true},
		{[]Feature{FeatureBinaryTensorData}, []Transport{TransportGRPC}, []string{"transport:rest", "feature:binary_tensor_data"}, false},
		{[]Feature{FeatureBinaryTensorData}, []Transport{TransportGRPC}, []string{"transport:grpc"}, true},
	}
	for _, c := range cases {
		expr := LabelFilter(c.features, c.transports)
		f, err := types.ParseLabelFilter(expr)
		if err != nil {
			t.Fatalf("LabelFilter(%v, %v) = %q: %v", c.features, c.transports, expr, err)
		}
		if got := f(c.labels); got != c.want {
			t.Errorf("filter %q on %v = %v, want %v", expr, c.labels, got, c.want)
		}
	}
}

func TestParseFeatures(t *testing.T) {
	fs, err := ParseFeatures(" binary_tensor_data ,")
	if err != nil || len(fs) != 1 || fs[0] != FeatureBinaryTensorData {
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
