package oiptarget

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// Allocation guards of the generator's hot path: one request sent and its
// answer read, for every protocol, against a reference server running in a
// subprocess so that only the generator's allocations are counted.
// Allocation counts are deterministic (times are not, and are not asserted).
//
// REST allocates nothing per request (client.PreparedInfer). gRPC
// (client.PreparedGRPCInfer over h2c) allocates 4, all in x/net's
// http2.Framer, which reuses only DATA frames: the answer's two HEADERS
// frames and the PING and WINDOW_UPDATE that grpc-go's server sends with
// each answer. grpc-go's own client took 94.
var maxAllocsPerRequest = map[client.Protocol]float64{
	client.ProtocolHTTP:       0,
	client.ProtocolHTTPBinary: 0,
	client.ProtocolGRPC:       6,
	client.ProtocolGRPCRaw:    6,
}

const serverHelperEnv = "OIPKIT_TEST_REFERENCE_SERVER"

// TestHelperReferenceServer is the subprocess: a reference server that
// prints its addresses and runs until its standard input closes.
func TestHelperReferenceServer(t *testing.T) {
	if os.Getenv(serverHelperEnv) == "" {
		t.Skip("helper of TestHotPathAllocs")
	}
	srv := referencetest.Start(t)
	fmt.Printf("addresses %s %s\n", srv.HTTPURL(), srv.GRPCAddr())
	io.Copy(io.Discard, os.Stdin)
}

// referenceSubprocess starts the reference server in a subprocess (see
// TestHelperReferenceServer) for the test's or benchmark's duration.
func referenceSubprocess(tb testing.TB) (httpURL, grpcAddr string) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReferenceServer$")
	cmd.Env = append(os.Environ(), serverHelperEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "addresses" {
			httpURL, grpcAddr = f[1], f[2]
			break
		}
	}
	if httpURL == "" {
		tb.Fatalf("the server subprocess did not start: %v", sc.Err())
	}
	go io.Copy(io.Discard, stdout)
	return httpURL, grpcAddr
}

// TestHotPathAllocs counts the allocations of a request whose answer is not
// sampled (see sample.go), with sampling off and with it on: an answer not
// sampled costs nothing more. (The target's first answer is sampled, during
// the warm-up.)
func TestHotPathAllocs(t *testing.T) {
	httpURL, grpcAddr := referenceSubprocess(t)
	ctx := context.Background()
	for _, p := range client.Protocols {
		for _, every := range []int{0, 1 << 20} {
			cfg := loadgen.Config{Target: loadgen.TargetConfig{HTTP: httpURL, Protocol: p, Model: "add_sub"}, Load: loadgen.LoadConfig{Concurrency: 1},
				Inputs: loadgen.InputConfig{CheckEvery: &every}}
			if p.IsGRPC() {
				cfg.Target.HTTP, cfg.Target.GRPC = "", grpcAddr
			}
			tg, err := NewTarget(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var seq uint64
			do := func() {
				if err := tg.Do(ctx, seq); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				seq++
			}
			for range 200 { // connections, pools and buffers warm
				do()
			}
			n := testing.AllocsPerRun(1000, do)
			t.Logf("%s, --check-every %d: %.0f allocations per request", p, every, n)
			if n > maxAllocsPerRequest[p] {
				t.Errorf("%s, --check-every %d: %.0f allocations per request, want at most %.0f", p, every, n, maxAllocsPerRequest[p])
			}
			tg.Close()
		}
	}
}
