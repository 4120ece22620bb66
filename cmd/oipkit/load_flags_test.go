package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/loadgentest"
	"github.com/oipkit/oipkit/loadgen/oiptarget"
)

// Every field the load generator's messages may name is set by a flag of
// oipkit load, which flagWords names instead.
func TestFlagOfNamesLoadFlags(t *testing.T) {
	var cfg loadgen.Config
	var f loadFlags
	fs := newLoadFlagSet(&cfg, &f)
	for field, flag := range flagOf {
		if fs.Lookup(strings.TrimLeft(flag, "-")) == nil {
			t.Errorf("%s: oipkit load has no flag %s", field, flag)
		}
	}
	for in, want := range map[string]string{
		"give one of Load.Stability and a request count (Load.Requests)": "give one of --stability and a request count (-n)",
		"Config.SLOResolution needs Config.SLO":                          "--slo-resolution needs --slo",
		"Load.Stability.MaxDuration must be positive":                    "--max-duration must be positive",
		"Load.RateRange, Load.Rate and Load.Ratex":                       "--rate-range, --rate and Load.Ratex",
	} {
		if got := flagWords(in); got != want {
			t.Errorf("flagWords(%q) = %q, want %q", in, got, want)
		}
	}
}

// The configuration errors of the engine and the OIP target name only
// fields flagOf knows: after flagWords, none is left.
func TestLoadErrorsNameFlags(t *testing.T) {
	field := regexp.MustCompile(`\b(Config|Target|Inputs|Load|Checks|Streaming|Sequence)\.[A-Z]\w*`)
	base := func() loadgen.Config {
		return loadgen.Config{Target: loadgen.TargetConfig{GRPC: "127.0.0.1:1", Model: "m"}}
	}
	for name, mutate := range map[string]func(*loadgen.Config){
		"no target":     func(c *loadgen.Config) { c.Target.GRPC = "" },
		"protocol":      func(c *loadgen.Config) { c.Target.Protocol = "http" },
		"stream shape":  func(c *loadgen.Config) { c.Streaming = &loadgen.StreamConfig{Shape: "x"} },
		"text input":    func(c *loadgen.Config) { c.Streaming = &loadgen.StreamConfig{TextInput: "x"} },
		"sequences":     func(c *loadgen.Config) { c.Sequence = &loadgen.SequenceConfig{Length: 2, Sequences: 2} },
		"stability":     func(c *loadgen.Config) { c.Load.Stability, c.Load.Requests = &loadgen.StabilityConfig{}, 5 },
		"max duration":  func(c *loadgen.Config) { c.Load.Stability = &loadgen.StabilityConfig{MaxDuration: -1} },
		"arrival":       func(c *loadgen.Config) { c.Load.Arrival = "poisson" },
		"resolution":    func(c *loadgen.Config) { c.SLOResolution = 0.1 },
		"segment":       func(c *loadgen.Config) { c.Load.Segment, c.AbortOnFail = &loadgen.Segment{Index: 0, Count: 2}, true },
		"shared memory": func(c *loadgen.Config) { c.Inputs.SharedMemory = "gpu" },
		"check every":   func(c *loadgen.Config) { n := -1; c.Inputs.CheckEvery = &n },
		"range and rate": func(c *loadgen.Config) {
			c.Load.RateRange, c.Load.Rate = loadgentest.Levels("1:2"), loadgentest.Rate("5")
		},
		"duration": func(c *loadgen.Config) {
			c.Load.Stability, c.Load.Duration = &loadgen.StabilityConfig{}, loadgen.Duration(time.Second)
		},
		"stream validate": func(c *loadgen.Config) { c.Streaming, c.Inputs.Validate = &loadgen.StreamConfig{}, true },
	} {
		c := base()
		mutate(&c)
		err := oiptarget.Normalize(&c)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if msg := flagWords(err.Error()); field.MatchString(msg) || !strings.Contains(msg, "-") {
			t.Errorf("%s: %q names a field flagOf does not know, or no flag", name, msg)
		}
	}
}
