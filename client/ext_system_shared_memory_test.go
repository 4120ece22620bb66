package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// A shared memory object is created once, mapped, and removed by Close.
func TestCreateSharedMemory(t *testing.T) {
	key := fmt.Sprintf("/oipkit_client_%d", os.Getpid())
	m, err := client.CreateSharedMemory(key, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(m.Bytes()) != 100 || m.Key != key {
		t.Fatalf("object %q of %d bytes", m.Key, len(m.Bytes()))
	}
	m.Bytes()[99] = 7
	if _, err := client.CreateSharedMemory(key, 100); err == nil {
		t.Error("creating an existing object succeeded")
	}
	for _, bad := range []string{"", "/", "a/b", "/..", "x\x00"} {
		if _, err := client.CreateSharedMemory(bad, 8); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
	if _, err := client.CreateSharedMemory(key+"_0", 0); err == nil {
		t.Error("size 0 accepted")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/dev/shm" + key); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("object still there after Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A refused call is an *Error carrying the server's message, over both
// transports.
func TestSystemSharedMemoryCallErrors(t *testing.T) {
	srv := referencetest.Start(t)
	ctx := context.Background()
	rest, _ := client.NewREST(srv.HTTPURL(), false, client.Options{})
	g, err := client.NewGRPC(srv.GRPCAddr(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for name, err := range map[string]error{
		"rest register":   rest.SystemSharedMemoryRegister(ctx, "r", "/oipkit_missing_key", 0, 8),
		"rest unregister": rest.SystemSharedMemoryUnregister(ctx, "nope"),
		"grpc register":   g.SystemSharedMemoryRegister(ctx, "r", "/oipkit_missing_key", 0, 8),
		"grpc unregister": g.SystemSharedMemoryUnregister(ctx, "nope"),
	} {
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Message == "" {
			t.Errorf("%s: %v, want a *client.Error with the server's message", name, err)
		}
	}
	if _, err := rest.SystemSharedMemoryStatus(ctx, "nope"); err == nil {
		t.Error("REST status of an unknown region succeeded")
	}
	if _, err := g.SystemSharedMemoryStatus(ctx, "nope"); err == nil {
		t.Error("gRPC status of an unknown region succeeded")
	}
}
