package oiptarget_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/oiptarget"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
)

// leftovers lists this process's load generator objects in /dev/shm.
func leftovers(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(fmt.Sprintf("/dev/shm/oipkit_load_%d_*", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// --shared-memory system over every protocol: the requests name regions
// instead of carrying data (the serialized request is small), they
// succeed, and the regions are unregistered and removed when the target
// closes.
func TestSharedMemorySystem(t *testing.T) {
	srv := referencetest.Start(t)
	ctx := context.Background()
	ctl, err := client.NewREST(srv.HTTPURL(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range client.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := loadgen.Config{
				Target: loadgen.TargetConfig{Protocol: p, Model: "add_sub"},
				Inputs: loadgen.InputConfig{SharedMemory: oiptarget.SharedMemorySystem, Shapes: []string{"INPUT0:64,16", "INPUT1:64,16"}},
				Load:   loadgen.LoadConfig{Concurrency: 2, Duration: loadgen.Duration(300 * time.Millisecond), Interval: loadgen.Duration(100 * time.Millisecond)},
			}
			if p.IsGRPC() {
				cfg.Target.GRPC = srv.GRPCAddr()
			} else {
				cfg.Target.HTTP = srv.HTTPURL()
			}
			tg, err := oiptarget.NewTarget(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			regions, err := ctl.SystemSharedMemoryStatus(ctx, "")
			if err != nil || len(regions) != 2 {
				t.Errorf("registered regions during the run: %+v, %v; want the inputs' and the outputs'", regions, err)
			}
			// 2 inputs of 1024 INT32 are 8 KiB of data; the request only
			// names where it is.
			if b := tg.Info().Bytes[0]; b > 1024 {
				t.Errorf("serialized request is %d bytes: the inputs are not in shared memory", b)
			}
			res, err := loadgen.Run(ctx, tg, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts.OK == 0 || res.Counts.Errors+res.Counts.Timeouts != 0 {
				t.Errorf("counts %+v, errors %v", res.Counts, res.Errors)
			}
			if err := tg.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if regions, err := ctl.SystemSharedMemoryStatus(ctx, ""); err != nil || len(regions) != 0 {
				t.Errorf("regions after close: %+v, %v", regions, err)
			}
			if l := leftovers(t); len(l) > 0 {
				t.Errorf("objects left in /dev/shm: %v", l)
			}
		})
	}
}

// A registration the server refuses fails the target with the reason, and
// what was already registered and created is removed.
func TestSharedMemoryCleanupOnFailure(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxSharedMemoryRegions = 1 })
	ctx := context.Background()
	cfg := loadgen.Config{
		Target: loadgen.TargetConfig{HTTP: srv.HTTPURL(), Model: "add_sub"},
		Inputs: loadgen.InputConfig{SharedMemory: oiptarget.SharedMemorySystem},
		Load:   loadgen.LoadConfig{Concurrency: 1, Duration: loadgen.Duration(100 * time.Millisecond)},
	}
	tg, err := oiptarget.NewTarget(ctx, cfg)
	if err == nil {
		tg.Close()
		t.Fatal("NewTarget succeeded with a server that takes one region")
	}
	if !strings.Contains(err.Error(), "register system shared memory") {
		t.Errorf("error %q does not say what failed", err)
	}
	ctl, _ := client.NewREST(srv.HTTPURL(), false, client.Options{})
	if regions, err := ctl.SystemSharedMemoryStatus(ctx, ""); err != nil || len(regions) != 0 {
		t.Errorf("regions left registered: %+v, %v", regions, err)
	}
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("objects left in /dev/shm: %v", l)
	}
	for _, c := range []struct{ mode, want string }{{"cuda", "not supported"}, {"gpu", "unknown Inputs.SharedMemory"}} {
		cfg.Inputs.SharedMemory = c.mode
		if _, err := oiptarget.NewTarget(ctx, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--shared-memory %s: %v, want an error saying %q", c.mode, err, c.want)
		}
	}
	cfg.Inputs.SharedMemory, cfg.Inputs.Validate = oiptarget.SharedMemorySystem, true
	if _, err := oiptarget.NewTarget(ctx, cfg); err == nil || !strings.Contains(err.Error(), "cannot be combined") {
		t.Errorf("--validate with shared memory: %v", err)
	}
}
