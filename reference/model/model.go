package model

import (
	"context"
	"errors"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// Model is one version of a model. The server validates every request against
// the model's metadata (names, datatypes, ranks, fixed dimensions, element
// counts) before calling Infer, so Infer may assume well-formed inputs.
type Model interface {
	// Metadata describes the model. Versions lists only this version; the
	// repository merges versions when it answers metadata requests.
	Metadata() oip.ModelMetadata
	// Infer computes every output. inputs holds one tensor per declared
	// input; params are the request-level parameters. The server drops
	// outputs that were not requested. Errors wrapping ErrInvalidInput are
	// the client's fault (HTTP 400, INVALID_ARGUMENT); any other error is a
	// server fault.
	Infer(ctx context.Context, inputs map[string]tensor.Tensor, params oip.Parameters) ([]tensor.Tensor, error)
}

// ErrInvalidInput marks inputs or parameters that passed metadata validation
// but that the model still cannot use, such as two inputs whose variable
// dimensions disagree or a malformed model-specific parameter.
var ErrInvalidInput = errors.New("invalid input")

// Platform is the platform name reported by every native model.
const Platform = "oipkit_native"
