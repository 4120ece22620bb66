package search

import (
	"context"

	"github.com/oipkit/oipkit/loadgen"
)

// Run executes cfg against t: a sweep when cfg.Load has a ConcurrencyRange
// or a RateRange, an SLO search when cfg.SLO is set, and otherwise the
// engine's single measurement ([loadgen.Run]). Like loadgen.Run it returns
// an error wrapping [loadgen.ErrConfig] for an invalid configuration and
// counts failed requests in the result.
func Run(ctx context.Context, t loadgen.Target, cfg loadgen.Config) (*loadgen.Result, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	if err := loadgen.CheckTarget(t, cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.SLO != nil:
		return search(ctx, t, cfg), nil
	case cfg.Sweep():
		return sweep(ctx, t, cfg), nil
	}
	return loadgen.Run(ctx, t, cfg)
}
