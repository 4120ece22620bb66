package conformance_test

import (
	"os"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/conformance"
	"github.com/oipkit/oipkit/conformance/report"
)

// TestConformance runs the suite against the server named by the OIPKIT_*
// environment variables, so that ginkgo's own flags work:
//
//	OIPKIT_HTTP=http://127.0.0.1:8000 OIPKIT_GRPC=127.0.0.1:8001 \
//	    go test ./conformance/ -ginkgo.label-filter='req: containsAny {OIP-REST-INFER-006}' -ginkgo.v
//
// Without a target it skips: `oipkit conform` (or `make conform`) tests the
// bundled reference server, and package selftest proves the suite's teeth.
func TestConformance(t *testing.T) {
	opts, ok, err := conformance.OptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skipf("no target: set %s and/or %s to run the conformance suite against a server", conformance.EnvHTTP, conformance.EnvGRPC)
	}
	rep, err := conformance.Run(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := report.WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	if code := rep.ExitCode(); code != 0 {
		t.Errorf("conformance verdict: exit status %d (3 failed, 2 incomplete, 4 partial)", code)
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
