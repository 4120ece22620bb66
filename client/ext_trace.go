package client

import (
	"context"
	"net/url"

	"github.com/oipkit/oipkit/oip"
)

// Calls of the trace extension. An empty model means the server's
// settings; in an update, an empty value clears a model's setting.

func tracePath(model string) string {
	if model == "" {
		return "/v2/trace/setting"
	}
	return "/v2/models/" + url.PathEscape(model) + "/trace/setting"
}

// TraceSettings fetches GET /v2[/models/{m}]/trace/setting.
func (c *REST) TraceSettings(ctx context.Context, model string) (oip.TraceSettings, error) {
	const op = "TraceSettings"
	raw, err := c.get(ctx, op, tracePath(model))
	s, err := jsonAnswer[oip.TraceSettings](op, "trace settings", raw, err)
	if err != nil {
		return nil, err
	}
	return *s, nil
}

// UpdateTraceSettings changes the settings u names (POST
// /v2[/models/{m}]/trace/setting) and returns the settings after it.
func (c *REST) UpdateTraceSettings(ctx context.Context, model string, u oip.TraceSettings) (oip.TraceSettings, error) {
	const op = "UpdateTraceSettings"
	raw, err := c.post(ctx, op, tracePath(model), u)
	s, err := jsonAnswer[oip.TraceSettings](op, "trace settings", raw, err)
	if err != nil {
		return nil, err
	}
	return *s, nil
}

// TraceSettings calls TraceSetting with no change.
func (c *GRPC) TraceSettings(ctx context.Context, model string) (oip.TraceSettings, error) {
	return c.UpdateTraceSettings(ctx, model, nil)
}

// UpdateTraceSettings calls TraceSetting with the settings u names.
func (c *GRPC) UpdateTraceSettings(ctx context.Context, model string, u oip.TraceSettings) (oip.TraceSettings, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.TraceSetting(ctx, oip.TraceUpdateToProto(model, u))
	if err != nil {
		return nil, callError(ctx, "TraceSetting", err)
	}
	return oip.TraceSettingsFromProto(r), nil
}
