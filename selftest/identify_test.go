package selftest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/oipkit/oipkit/reference/referencetest"
)

// identifyBudget is how soon `oipkit conform` must give up on a target that
// is not an OIP server (issue 8: "exit 2 in under 2 s"). Identification
// itself is bounded by client.DefaultIdentifyTimeout; these targets answer
// at once, so the run ends long before.
const identifyBudget = 2 * time.Second

// wantNotOIP checks a run against a target that is not an OIP server: exit
// 2 within the budget, one line "not an OIP server: …" naming what
// answered, and no report.
func wantNotOIP(t *testing.T, run conformRun, fragments ...string) {
	t.Helper()
	t.Logf("exit %d after %v: %s", run.exit, run.elapsed, strings.TrimSpace(run.output))
	if run.exit != 2 {
		t.Errorf("exit %d, want 2", run.exit)
	}
	if run.elapsed > identifyBudget {
		t.Errorf("took %v, want under %v", run.elapsed, identifyBudget)
	}
	out := strings.TrimSpace(run.output)
	if strings.Count(out, "\n") != 0 || !strings.Contains(out, "not an OIP server: ") {
		t.Errorf("output is not one line saying \"not an OIP server: …\":\n%s", out)
	}
	for _, f := range fragments {
		if !strings.Contains(out, f) {
			t.Errorf("output does not say %q:\n%s", f, out)
		}
	}
	if _, err := os.Stat(filepath.Join(run.dir, "report.json")); err == nil {
		t.Error("a report was written, though no spec can run")
	}
}

// TestStaticWebServerIsNotOIP: `python3 -m http.server`, the first thing a
// new user might point the suite at by mistake.
func TestStaticWebServerIsNotOIP(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0")
	cmd.Dir = t.TempDir()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`port (\d+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
				break
			}
		}
		for sc.Scan() {
		}
	}()
	var url string
	select {
	case p := <-port:
		url = "http://127.0.0.1:" + p
	case <-time.After(20 * time.Second):
		t.Fatal("python3 -m http.server did not say its port")
	}
	wantNotOIP(t, conform(t, "--http", url), url, "404")
}

// TestOtherGRPCServiceIsNotOIP: a gRPC server that serves only the standard
// health service; reflection names what it serves.
func TestOtherGRPCServiceIsNotOIP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	reflection.Register(s)
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	wantNotOIP(t, conform(t, "--grpc", ln.Addr().String()), "inference.GRPCInferenceService", "grpc.health.v1.Health")
}

// TestSwappedPortsAreNotOIP: the reference server's gRPC port given as
// --http and its HTTP port as --grpc.
func TestSwappedPortsAreNotOIP(t *testing.T) {
	srv := referencetest.Start(t)
	httpAddr := strings.TrimPrefix(srv.HTTPURL(), "http://")
	wantNotOIP(t, conform(t, "--http", "http://"+srv.GRPCAddr(), "--grpc", httpAddr), "gRPC port", "REST port")
}
