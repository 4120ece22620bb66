package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
)

type repositoryClient interface {
	RepositoryIndex(ctx context.Context, readyOnly bool) ([]oip.RepositoryModel, error)
	LoadModel(ctx context.Context, model, config string) error
	UnloadModel(ctx context.Context, model string, unloadDependents bool) error
	ModelReady(ctx context.Context, model, version string) (bool, error)
}

func TestModelRepository(t *testing.T) {
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
	for name, c := range map[string]repositoryClient{"rest": rest, "grpc": grpc} {
		t.Run(name, func(t *testing.T) {
			state := func(readyOnly bool, model string) string {
				idx, err := c.RepositoryIndex(ctx, readyOnly)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range idx {
					if m.Name == model {
						return m.State
					}
				}
				return ""
			}
			if s := state(false, "broken"); s != "UNAVAILABLE" {
				t.Errorf("broken: %q", s)
			}
			if err := c.UnloadModel(ctx, "repo_target", true); err != nil {
				t.Fatal(err)
			}
			if s := state(true, "repo_target"); s != "" {
				t.Errorf("an unloaded model is listed as ready: %q", s)
			}
			if err := c.LoadModel(ctx, "repo_target", `{"name":"repo_target"}`); err != nil {
				t.Fatal(err)
			}
			if ready, err := c.ModelReady(ctx, "repo_target", ""); err != nil || !ready {
				t.Errorf("ModelReady after load: %v, %v", ready, err)
			}
			var e *client.Error
			if err := c.LoadModel(ctx, "broken", ""); !errors.As(err, &e) {
				t.Errorf("load broken: %v, want a *client.Error", err)
			}
			c.UnloadModel(ctx, "broken", false)
		})
	}
}
