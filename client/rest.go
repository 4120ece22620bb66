package client

import (
	"context"
	"net/http"

	"github.com/oipkit/oipkit/oip"
)

// REST is the REST transport. With binary set it sends inputs and asks for
// outputs through the binary-data extension.
type REST struct {
	// TODO(helper)
}

// RawResponse is an HTTP exchange's answer as received.
type RawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// NewREST returns a REST client for baseURL (scheme, host and port; no path
// beyond an optional prefix).
func NewREST(baseURL string, binary bool, opts Options) (*REST, error) { panic("TODO") }

// Do sends one HTTP request to path (e.g. "/v2/models/add_sub/infer") with the
// client's headers, timeout and size limit, and returns the answer whatever
// its status. It is for callers that must send malformed requests or inspect
// raw answers; err is non-nil only when no complete answer arrived.
func (c *REST) Do(ctx context.Context, method, path string, header http.Header, body []byte) (*RawResponse, error) {
	panic("TODO")
}

func (c *REST) ServerLive(ctx context.Context) (bool, error)  { panic("TODO") }
func (c *REST) ServerReady(ctx context.Context) (bool, error) { panic("TODO") }
func (c *REST) ModelReady(ctx context.Context, model, version string) (bool, error) {
	panic("TODO")
}
func (c *REST) ServerMetadata(ctx context.Context) (*oip.ServerMetadata, error) { panic("TODO") }
func (c *REST) ModelMetadata(ctx context.Context, model, version string) (*oip.ModelMetadata, error) {
	panic("TODO")
}
func (c *REST) Infer(ctx context.Context, req *oip.InferRequest) (*oip.InferResponse, error) {
	panic("TODO")
}
func (c *REST) Close() error { panic("TODO") }
