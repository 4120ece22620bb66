package client_test

import (
	"context"
	"testing"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
)

type logClient interface {
	LogSettings(ctx context.Context) (*oip.LogSettings, error)
	UpdateLogSettings(ctx context.Context, u oip.LogSettingsUpdate) (*oip.LogSettings, error)
}

func TestLogSettings(t *testing.T) {
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
	level := uint32(0)
	for name, c := range map[string]logClient{"rest": rest, "grpc": grpc} {
		t.Run(name, func(t *testing.T) {
			level++
			s, err := c.UpdateLogSettings(ctx, oip.LogSettingsUpdate{VerboseLevel: &level})
			if err != nil || s.VerboseLevel != level || !s.Error || s.Format != oip.LogFormatDefault {
				t.Fatalf("update: %+v, %v", s, err)
			}
			if s, err := c.LogSettings(ctx); err != nil || s.VerboseLevel != level {
				t.Fatalf("read back: %+v, %v", s, err)
			}
			bad := "xml"
			if _, err := c.UpdateLogSettings(ctx, oip.LogSettingsUpdate{Format: &bad}); err == nil {
				t.Fatal("log_format xml accepted")
			}
		})
	}
}
