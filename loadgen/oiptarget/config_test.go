package oiptarget

import (
	"errors"
	"testing"

	"github.com/oipkit/oipkit/loadgen"
)

// Normalize checks the OIP target's settings besides the engine's, and
// fills their defaults; a second call accepts its own output.
func TestNormalizeTargetSettings(t *testing.T) {
	base := func() loadgen.Config {
		return loadgen.Config{Target: loadgen.TargetConfig{HTTP: "127.0.0.1:8000", Model: "m"}}
	}
	for name, mutate := range map[string]func(*loadgen.Config){
		"no address":       func(c *loadgen.Config) { c.Target.HTTP = "" },
		"two addresses":    func(c *loadgen.Config) { c.Target.GRPC = "127.0.0.1:1" },
		"no model":         func(c *loadgen.Config) { c.Target.Model = "" },
		"negative timeout": func(c *loadgen.Config) { c.Target.Timeout = -1 },
		"grpc URL":         func(c *loadgen.Config) { c.Target.HTTP, c.Target.GRPC = "", "grpc://127.0.0.1:1" },
		"bad shape":        func(c *loadgen.Config) { c.Inputs.Shapes = []string{"x"} },
		"bad data":         func(c *loadgen.Config) { c.Inputs.Data = "ones" },
		"engine setting":   func(c *loadgen.Config) { c.Load.Duration = -1 },
	} {
		c := base()
		mutate(&c)
		if err := Normalize(&c); !errors.Is(err, loadgen.ErrConfig) {
			t.Errorf("%s: Normalize = %v, want a configuration error", name, err)
		}
	}
	c := base()
	if err := Normalize(&c); err != nil {
		t.Fatal(err)
	}
	again := c
	if err := Normalize(&again); err != nil {
		t.Errorf("a second Normalize failed: %v", err)
	}
	if c.Target.HTTP != "http://127.0.0.1:8000" || c.Target.Timeout.D() != DefaultTimeout || c.Inputs.Data != "random" || c.Load.Concurrency != 1 {
		t.Errorf("defaults: %+v, %+v, %+v", c.Target, c.Inputs, c.Load)
	}
}
