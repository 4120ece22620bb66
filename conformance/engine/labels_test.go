package engine

import (
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/oipkit/oipkit/specs"
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
		{[]Feature{specs.ExtBinaryTensorData}, []Transport{TransportREST, TransportGRPC}, []string{"transport:rest", "feature:binary_tensor_data"}, true},
		{[]Feature{specs.ExtBinaryTensorData}, []Transport{TransportGRPC}, []string{"transport:rest", "feature:binary_tensor_data"}, false},
		{[]Feature{specs.ExtBinaryTensorData}, []Transport{TransportGRPC}, []string{"transport:grpc"}, true},
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
