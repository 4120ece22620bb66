// Package model is the reference server's native (pure Go) executor: the
// [Model] interface through which models plug in, a [Repository] of loaded
// models and versions, and the fixture models of the oipkit fixture contract
// (add_sub, identity_<t>, versioned, delay).
package model

import (
	"context"

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
	// outputs that were not requested.
	Infer(ctx context.Context, inputs map[string]tensor.Tensor, params oip.Parameters) ([]tensor.Tensor, error)
}
