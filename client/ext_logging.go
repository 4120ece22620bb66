package client

import (
	"context"

	"github.com/oipkit/oipkit/oip"
)

// Calls of the logging extension.

// LogSettings fetches GET /v2/logging.
func (c *REST) LogSettings(ctx context.Context) (*oip.LogSettings, error) {
	const op = "LogSettings"
	raw, err := c.get(ctx, op, "/v2/logging")
	return jsonAnswer[oip.LogSettings](op, "log settings", raw, err)
}

// UpdateLogSettings changes the settings u sets (POST /v2/logging) and
// returns every setting after the change.
func (c *REST) UpdateLogSettings(ctx context.Context, u oip.LogSettingsUpdate) (*oip.LogSettings, error) {
	const op = "UpdateLogSettings"
	raw, err := c.post(ctx, op, "/v2/logging", u)
	return jsonAnswer[oip.LogSettings](op, "log settings", raw, err)
}

// LogSettings calls LogSettings with no change.
func (c *GRPC) LogSettings(ctx context.Context) (*oip.LogSettings, error) {
	return c.UpdateLogSettings(ctx, oip.LogSettingsUpdate{})
}

// UpdateLogSettings calls LogSettings with the settings u sets.
func (c *GRPC) UpdateLogSettings(ctx context.Context, u oip.LogSettingsUpdate) (*oip.LogSettings, error) {
	const op = "LogSettings"
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.LogSettings(ctx, oip.LogUpdateToProto(u))
	if err != nil {
		return nil, callError(ctx, op, err)
	}
	s, err := oip.LogSettingsFromProto(r)
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	return &s, nil
}
