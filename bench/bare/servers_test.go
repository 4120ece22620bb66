package main

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"google.golang.org/grpc"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/oiptarget"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// BenchmarkServers is the in-process counterpart of the reference-server rows
// of scripts/bench-compare.sh: the reference server and the bare one, each
// driven by oipkit load's own request path (oiptarget.OIPTarget.Do) with 16
// requests in flight, the add_sub request of the script, one gRPC connection
// or 16 keep-alive REST connections. Client and server share the process and
// its cores, as they share the machine in the script, so ns/op is the whole
// cost of a request; the ratio bare/reference of two sub-benchmarks run next
// to each other is the script's throughput ratio without its tools. Compare
// with benchstat over -count 6 runs; profile one server with -cpuprofile.
func BenchmarkServers(b *testing.B) {
	req := benchRequest(b)
	jsonBody, _, err := oip.EncodeRESTRequest(req, oip.RESTEncoding{})
	if err != nil {
		b.Fatal(err)
	}
	a, err := newAnswers(jsonBody)
	if err != nil {
		b.Fatal(err)
	}
	// The script's input-data file: the same numbers as benchRequest.
	input := filepath.Join(b.TempDir(), "input.json")
	if err := os.WriteFile(input, []byte(`{"data": [{"INPUT0": {"content": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16], "shape": [1, 16]},
		"INPUT1": {"content": [101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116], "shape": [1, 16]}}]}`), 0o644); err != nil {
		b.Fatal(err)
	}

	ref := referencetest.Start(b)
	bareHTTP := httptest.NewServer(a)
	b.Cleanup(bareHTTP.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bareGRPCSrv := grpc.NewServer()
	inferencepb.RegisterGRPCInferenceServiceServer(bareGRPCSrv, &bareGRPC{a: a})
	go bareGRPCSrv.Serve(ln)
	b.Cleanup(bareGRPCSrv.Stop)

	const concurrency = 16
	for _, c := range []struct {
		name     string
		protocol client.Protocol
	}{{"grpc-raw", client.ProtocolGRPCRaw}, {"http", client.ProtocolHTTP}, {"http-binary", client.ProtocolHTTPBinary}} {
		for _, s := range []struct{ name, http, grpc string }{
			{"bare", bareHTTP.URL, ln.Addr().String()},
			{"reference", ref.HTTPURL(), ref.GRPCAddr()},
		} {
			b.Run(c.name+"/"+s.name, func(b *testing.B) {
				cfg := loadgen.Config{
					Target: loadgen.TargetConfig{Protocol: c.protocol, Model: "add_sub"},
					Load:   loadgen.LoadConfig{Concurrency: concurrency},
					Inputs: loadgen.InputConfig{File: input},
				}
				if c.protocol.IsGRPC() {
					cfg.Target.GRPC = s.grpc
				} else {
					cfg.Target.HTTP = s.http
				}
				ctx := context.Background()
				tg, err := oiptarget.NewTarget(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer tg.Close()
				p := runtime.GOMAXPROCS(0)
				b.SetParallelism((concurrency + p - 1) / p)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for i := uint64(0); pb.Next(); i++ {
						if err := tg.Do(ctx, i); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
