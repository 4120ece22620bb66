package client

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Calls of the model repository extension.

// RepositoryIndex lists the models of the repository (POST
// /v2/repository/index); readyOnly keeps those ready for inference.
func (c *REST) RepositoryIndex(ctx context.Context, readyOnly bool) ([]oip.RepositoryModel, error) {
	const op = "RepositoryIndex"
	raw, err := c.post(ctx, op, "/v2/repository/index", map[string]bool{"ready": readyOnly})
	if err != nil {
		return nil, err
	}
	var out []oip.RepositoryModel
	if err := json.Unmarshal(raw.Body, &out); err != nil || out == nil {
		return nil, &Error{Op: op, HTTPStatus: raw.Status, Message: "repository index is not a JSON array of models", Body: raw.Body, Err: err}
	}
	return out, nil
}

// LoadModel loads or reloads a model (POST /v2/repository/models/{m}/load);
// config, when not empty, is a JSON model configuration used instead of the
// repository's.
func (c *REST) LoadModel(ctx context.Context, model, config string) error {
	body := map[string]any{}
	if config != "" {
		body["parameters"] = map[string]string{"config": config}
	}
	_, err := c.post(ctx, "LoadModel", "/v2/repository/models/"+url.PathEscape(model)+"/load", body)
	return err
}

// UnloadModel unloads a model (POST /v2/repository/models/{m}/unload), and
// the models that depend on it when unloadDependents is set.
func (c *REST) UnloadModel(ctx context.Context, model string, unloadDependents bool) error {
	body := map[string]any{}
	if unloadDependents {
		body["parameters"] = map[string]bool{"unload_dependents": true}
	}
	_, err := c.post(ctx, "UnloadModel", "/v2/repository/models/"+url.PathEscape(model)+"/unload", body)
	return err
}

// RepositoryIndex calls RepositoryIndex.
func (c *GRPC) RepositoryIndex(ctx context.Context, readyOnly bool) ([]oip.RepositoryModel, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.RepositoryIndex(ctx, &inferencepb.RepositoryIndexRequest{Ready: readyOnly})
	if err != nil {
		return nil, callError(ctx, "RepositoryIndex", err)
	}
	out := []oip.RepositoryModel{}
	for _, m := range r.GetModels() {
		out = append(out, oip.RepositoryModel{Name: m.GetName(), Version: m.GetVersion(), State: m.GetState(), Reason: m.GetReason()})
	}
	return out, nil
}

// LoadModel calls RepositoryModelLoad.
func (c *GRPC) LoadModel(ctx context.Context, model, config string) error {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	req := &inferencepb.RepositoryModelLoadRequest{ModelName: model}
	if config != "" {
		req.Parameters = map[string]*inferencepb.ModelRepositoryParameter{
			"config": {ParameterChoice: &inferencepb.ModelRepositoryParameter_StringParam{StringParam: config}},
		}
	}
	if _, err := c.stub.RepositoryModelLoad(ctx, req); err != nil {
		return callError(ctx, "LoadModel", err)
	}
	return nil
}

// UnloadModel calls RepositoryModelUnload.
func (c *GRPC) UnloadModel(ctx context.Context, model string, unloadDependents bool) error {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	req := &inferencepb.RepositoryModelUnloadRequest{ModelName: model}
	if unloadDependents {
		req.Parameters = map[string]*inferencepb.ModelRepositoryParameter{
			"unload_dependents": {ParameterChoice: &inferencepb.ModelRepositoryParameter_BoolParam{BoolParam: true}},
		}
	}
	if _, err := c.stub.RepositoryModelUnload(ctx, req); err != nil {
		return callError(ctx, "UnloadModel", err)
	}
	return nil
}
