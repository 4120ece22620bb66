package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/merge"
)

// Every format of a streaming result shows its stream figures.
func TestFormatsShowStreaming(t *testing.T) {
	r := syntheticStream(syntheticSweep(), 1)
	r.Config.Streaming = &loadgen.StreamConfig{}
	r.Counts.Responses = 30
	for _, f := range []struct {
		name string
		want []string
	}{
		{"text", []string{"first response", "inter-response", "stream:   30 responses"}},
		{"csv", []string{"first_response_p50_us", "inter_response_p99_us"}},
		{"summary-csv", []string{"Responses/Second", "First Response p99", "Responses/Request"}},
	} {
		fm, err := FormatNamed(f.name)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := fm.New(r)(&out); err != nil {
			t.Fatal(err)
		}
		for _, w := range f.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s output lacks %q:\n%s", f.name, w, out.String())
			}
		}
	}
}

// The text puts the server's stream timing (from its metrics) beside the
// client's.
func TestTextShowsServerStreamTiming(t *testing.T) {
	r := syntheticStream(syntheticSweep(), 1)
	r.Server.Source = "metrics"
	var text strings.Builder
	if err := NewTextReporter(r)(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "server-side stream timing (metrics)") || !strings.Contains(text.String(), "client − server") {
		t.Errorf("text report without the stream comparison:\n%s", text.String())
	}
}

// A forced merge of different runs says which runs it merged and how they
// differ.
func TestTextOfAForcedMerge(t *testing.T) {
	a := loadgen.NewResult(loadgen.Config{Target: loadgen.TargetConfig{Protocol: client.ProtocolGRPCRaw, Model: "m"}, Load: loadgen.LoadConfig{Concurrency: 4}})
	b := loadgen.NewResult(loadgen.Config{Target: loadgen.TargetConfig{Protocol: client.ProtocolHTTP, Model: "m"}, Load: loadgen.LoadConfig{Concurrency: 4}})
	a.EndReason, b.EndReason = loadgen.EndCompleted, loadgen.EndCompleted
	a.Target = &loadgen.TargetInfo{}
	a.Target.Server.Name = "mlserver"
	a.Sources, b.Sources = []string{"a.json"}, []string{"b.json"}
	m, err := merge.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := NewTextReporter(m)(&out); err != nil || !strings.Contains(out.String(), "merged result of 2 runs: a.json, b.json") ||
		!strings.Contains(out.String(), "differ in protocol, server") {
		t.Errorf("text of a forced merge (%v):\n%s", err, out.String())
	}
}
