package selftest

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/oipkit/oipkit/conformance/report"
)

// TestDeclaredFixtures: a server whose models answer no metadata or
// readiness call (TorchServe's) hides its fixtures from discovery, and every
// inference requirement is skipped; declared with --fixtures, the inference
// specs run and grade the server's answers, while the metadata and readiness
// routes it lacks still fail.
func TestDeclaredFixtures(t *testing.T) {
	modelRoute := regexp.MustCompile(`^/v2/models/[^/]+(/versions/[^/]+)?(/ready)?$`)
	b := breakage{name: "no model metadata or readiness", rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && modelRoute.MatchString(r.URL.Path) {
			jsonError(w, http.StatusNotFound, `{"error":"no such route"}`)
			return true
		}
		return false
	}}}
	httpURL, _ := brokenServer(t, b)
	status := func(run conformRun, id string) report.Status {
		t.Helper()
		if run.report == nil {
			t.Fatalf("no report: exit %d\n%s", run.exit, run.output)
		}
		q, ok := run.report.Requirement(id)
		if !ok {
			t.Fatalf("%s not in the report", id)
		}
		return q.Status
	}
	hidden := conform(t, "--http", httpURL)
	if got := status(hidden, "OIP-REST-INFER-001"); got != report.StatusSkipped {
		t.Errorf("undeclared: OIP-REST-INFER-001 is %s, want skipped (no fixture discovered)", got)
	}
	declared := conform(t, "--http", httpURL, "--fixtures", "add_sub,identity_int32,identity_fp32,identity_bytes")
	for _, id := range []string{"OIP-REST-INFER-001", "OIP-REST-DATA-001"} {
		if got := status(declared, id); got != report.StatusPassed {
			t.Errorf("declared: %s is %s, want passed (the fixtures' inference works)", id, got)
		}
	}
	if got := status(declared, "OIP-REST-MMETA-001"); got != report.StatusFailed {
		t.Errorf("declared: OIP-REST-MMETA-001 is %s, want failed (model metadata still answers 404)", got)
	}
	if bad := conform(t, "--http", httpURL, "--fixtures", "add_sub,no_such_model"); bad.exit != 1 {
		t.Errorf("an unknown declared fixture: exit %d, want 1 (usage)\n%s", bad.exit, bad.output)
	}
}
