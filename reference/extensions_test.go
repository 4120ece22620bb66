package reference

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// The registry is consistent: known, distinct extensions; well-formed
// route templates; every RPC an extension names is implemented (it does
// not answer UNIMPLEMENTED to an empty request).
func TestExtensionRegistry(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr = "", "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(ctx)
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	var seen []specs.Extension
	for _, e := range extensionRegistry {
		if !slices.Contains(specs.Extensions, e.name) || slices.Contains(seen, e.name) {
			t.Errorf("extension %q: unknown or registered twice", e.name)
		}
		seen = append(seen, e.name)
		for _, r := range e.rest {
			if r.serve == nil || r.path == "" || r.path[0] != '/' || (r.method != "GET" && r.method != "POST") {
				t.Errorf("%s: bad route %s %q", e.name, r.method, r.path)
			}
		}
		for _, name := range e.grpc {
			method := "/" + inferencepb.GRPCInferenceService_ServiceDesc.ServiceName + "/" + name
			out := &emptypb.Empty{}
			err := conn.Invoke(ctx, method, &emptypb.Empty{}, out)
			if status.Code(err) == codes.Unimplemented {
				t.Errorf("%s: RPC %s is listed but answers UNIMPLEMENTED", e.name, name)
			}
		}
	}
	var names []specs.Extension
	for _, a := range srv.serverMeta.Extensions {
		e, _, ok := specs.ParseAdvertised(a)
		if !ok {
			t.Errorf("advertised %q is outside the vocabulary", a)
		}
		if !slices.Contains(names, e) {
			names = append(names, e)
		}
	}
	if !slices.Equal(names, Extensions) {
		t.Errorf("advertised %q, registry says %q", srv.serverMeta.Extensions, Extensions)
	}
}
