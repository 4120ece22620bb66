package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
)

func loadResult(server string, p client.Protocol, rps float64, p50, p99 time.Duration, errors int64) *loadgen.Result {
	r := &loadgen.Result{EndReason: loadgen.EndCompleted, Target: &loadgen.TargetInfo{Server: oip.ServerMetadata{Name: server, Version: "1.0"}}}
	r.Config.Target.Protocol = p
	r.Config.Target.Model = "add_sub"
	r.Config.Load.Concurrency = 4
	r.Config.Load.Duration = loadgen.Duration(10 * time.Second)
	r.Rates.Completed = rps
	r.Counts.Completed, r.Counts.Errors = int64(rps*10), errors
	r.Counts.OK = r.Counts.Completed - errors
	r.Latency.Response.P50, r.Latency.Response.P99 = int64(p50), int64(p99)
	return r
}

// The table groups rows by protocol, keeps the caller's server order within
// a protocol, and says which rows are not server figures.
func TestWriteComparison(t *testing.T) {
	rs := []*loadgen.Result{
		loadResult("mlserver", client.ProtocolGRPCRaw, 1157, 3*time.Millisecond, 6*time.Millisecond, 0),
		loadResult("oipkit-reference", client.ProtocolHTTP, 7015, 451*time.Microsecond, 2386*time.Microsecond, 0),
		loadResult("oipkit-reference", client.ProtocolGRPCRaw, 7971, 448*time.Microsecond, 1375*time.Microsecond, 0),
		loadResult("mlserver", client.ProtocolHTTP, 1409, 2365*time.Microsecond, 6177*time.Microsecond, 3),
	}
	servers := []string{"mlserver 1.0", "oipkit-reference 1.0", "oipkit-reference 1.0", "mlserver 1.0"}
	var b bytes.Buffer
	if err := WriteComparison(&b, rs, servers); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	rows := []string{
		"| REST JSON | mlserver 1.0 | 1409 | 2.365 | 6.177 | 14090 | 3 |",
		"| REST JSON | oipkit-reference 1.0 | 7015 | 0.451 | 2.386 | 70150 | 0 |",
		"| gRPC raw | mlserver 1.0 | 1157 | 3.000 | 6.000 | 11570 | 0 |",
		"| gRPC raw | oipkit-reference 1.0 | 7971 | 0.448 | 1.375 | 79710 | 0 |",
	}
	last := -1
	for _, row := range rows {
		i := strings.Index(out, row)
		if i < 0 || i < last {
			t.Errorf("row %q missing or out of order:\n%s", row, out)
		}
		last = i
	}
	for _, want := range []string{"load: closed loop, concurrency 4", "duration: 10s", "- mlserver 1.0 over REST JSON: 3 failed requests"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "differ in") {
		t.Errorf("runs with the same settings reported as different:\n%s", out)
	}
	if err := WriteComparison(&b, nil, nil); err == nil {
		t.Error("no results: no error")
	}
}

// A run in which every request failed, or that never reached its server,
// has no figures in the table, and its unknown inputs do not make the
// other runs "differ".
func TestWriteComparisonUnusableRuns(t *testing.T) {
	failed := loadResult("kserve", client.ProtocolHTTP, 191, 0, 0, 1910)
	never := &loadgen.Result{EndReason: loadgen.EndError, Error: "target not ready"}
	never.Config.Target.Protocol = client.ProtocolHTTP
	never.Config.Target.Model = "add_sub"
	never.Config.Load.Concurrency = 4
	never.Config.Load.Duration = loadgen.Duration(10 * time.Second)
	ok := loadResult("oipkit-reference", client.ProtocolHTTP, 7015, 451*time.Microsecond, 2386*time.Microsecond, 0)
	ok.Target.Inputs = []loadgen.TensorInfo{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 16}}}
	var b bytes.Buffer
	if err := WriteComparison(&b, []*loadgen.Result{ok, failed, never}, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| REST JSON | kserve 1.0 | — | — | — | 1910 | 1910 |",
		"| REST JSON | unknown server | — | — | — | 0 | 0 |",
		"inputs: INPUT0 INT32 [1 16]",
		"- kserve 1.0 over REST JSON: 1910 failed requests",
		"- unknown server over REST JSON: ended error: target not ready",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "differ in") {
		t.Errorf("a run that never reached its server makes the others differ:\n%s", out)
	}
	if err := WriteComparison(&b, []*loadgen.Result{ok}, []string{"a", "b"}); err == nil {
		t.Error("two server names for one result: no error")
	}
}

// Streaming results add responses/s, time to first response and gap
// columns; a run with one response a request has no gaps to show.
func TestWriteComparisonStreaming(t *testing.T) {
	a := loadResult("triton", client.ProtocolGRPCRaw, 321, 11*time.Millisecond, 36*time.Millisecond, 0)
	a.Rates.Responses = 2565
	a.Latency.FirstResponse = &loadgen.LatencySummary{Count: 3210, P50: int64(8651 * time.Microsecond), P99: int64(30 * time.Millisecond)}
	a.Latency.InterResponse = &loadgen.LatencySummary{Count: 22470, P50: int64(265 * time.Microsecond), P99: int64(2099 * time.Microsecond)}
	b1 := loadResult("mlserver", client.ProtocolGRPCRaw, 242, 15*time.Millisecond, 38*time.Millisecond, 0)
	b1.Rates.Responses = 242
	b1.Latency.FirstResponse = &loadgen.LatencySummary{Count: 2420, P50: int64(5 * time.Millisecond), P99: int64(16 * time.Millisecond)}
	b1.Latency.InterResponse = &loadgen.LatencySummary{}
	var b bytes.Buffer
	if err := WriteComparison(&b, []*loadgen.Result{a, b1}, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| responses/s | first response p50 (ms) | first response p99 (ms) | gap p50 (ms) | gap p99 (ms) | requests | failed |",
		"| gRPC raw | triton 1.0 | 321 | 11.000 | 36.000 | 2565 | 8.651 | 30.000 | 0.265 | 2.099 | 3210 | 0 |",
		"| gRPC raw | mlserver 1.0 | 242 | 15.000 | 38.000 | 242 | 5.000 | 16.000 | — | — | 2420 | 0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}
