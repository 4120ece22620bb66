package client

import (
	"context"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// GRPC is the gRPC transport. With raw set, Infer sends tensor data in
// raw_input_contents; otherwise in typed contents (FP16/BF16 always raw).
type GRPC struct {
	// TODO(helper)
}

// NewGRPC returns a gRPC client for addr ("host:port").
func NewGRPC(addr string, raw bool, opts Options) (*GRPC, error) { panic("TODO") }

// Stub returns the generated stub on the client's connection(s), for callers
// that must send hand-built messages. Calls through it do not get the
// client's timeout or metadata; use Context for that.
func (c *GRPC) Stub() inferencepb.GRPCInferenceServiceClient { panic("TODO") }

// Context derives a call context carrying the client's timeout and metadata.
func (c *GRPC) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	panic("TODO")
}

func (c *GRPC) ServerLive(ctx context.Context) (bool, error)  { panic("TODO") }
func (c *GRPC) ServerReady(ctx context.Context) (bool, error) { panic("TODO") }
func (c *GRPC) ModelReady(ctx context.Context, model, version string) (bool, error) {
	panic("TODO")
}
func (c *GRPC) ServerMetadata(ctx context.Context) (*oip.ServerMetadata, error) { panic("TODO") }
func (c *GRPC) ModelMetadata(ctx context.Context, model, version string) (*oip.ModelMetadata, error) {
	panic("TODO")
}
func (c *GRPC) Infer(ctx context.Context, req *oip.InferRequest) (*oip.InferResponse, error) {
	panic("TODO")
}
func (c *GRPC) Close() error { panic("TODO") }
