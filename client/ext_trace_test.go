package client_test

import (
	"context"
	"slices"
	"testing"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
)

type traceClient interface {
	TraceSettings(ctx context.Context, model string) (oip.TraceSettings, error)
	UpdateTraceSettings(ctx context.Context, model string, u oip.TraceSettings) (oip.TraceSettings, error)
}

func TestTraceSettings(t *testing.T) {
	srv := referencetest.Start(t)
	rest, err := client.NewREST(srv.HTTPURL(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rest.Close()
	grpc, err := client.NewGRPC(srv.GRPCAddr(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer grpc.Close()
	ctx := context.Background()
	for name, c := range map[string]traceClient{"rest": rest, "grpc": grpc} {
		t.Run(name, func(t *testing.T) {
			s, err := c.UpdateTraceSettings(ctx, "add_sub", oip.TraceSettings{oip.TraceRate: {"5"}, oip.TraceLevel: {"TIMESTAMPS"}})
			if err != nil || !slices.Equal(s[oip.TraceRate], []string{"5"}) || !slices.Equal(s[oip.TraceLevel], []string{"TIMESTAMPS"}) {
				t.Fatalf("update: %v, %v", s, err)
			}
			s, err = c.UpdateTraceSettings(ctx, "add_sub", oip.TraceSettings{oip.TraceRate: nil})
			if err != nil || !slices.Equal(s[oip.TraceRate], []string{"1000"}) {
				t.Fatalf("clear: %v, %v", s, err)
			}
			if s, err := c.TraceSettings(ctx, ""); err != nil || !slices.Equal(s[oip.TraceLevel], []string{"OFF"}) {
				t.Fatalf("server settings: %v, %v", s, err)
			}
			if _, err := c.UpdateTraceSettings(ctx, "", oip.TraceSettings{oip.TraceLevel: {"LOUD"}}); err == nil {
				t.Fatal("trace_level LOUD accepted")
			}
		})
	}
}
