package reference

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/internal/envswitch"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// EnvGRPCViews turns off answering gRPC requests with their own memory
// (OIPKIT_GRPC_VIEWS=off): every raw BYTES output is then encoded anew, as
// on the other transports.
const EnvGRPCViews = "OIPKIT_GRPC_VIEWS"

var grpcViews = envswitch.On(EnvGRPCViews)

// grpcService implements the core RPCs of inference.GRPCInferenceService;
// each extension implements its RPCs in its ext_<name>.go file (see
// extensions.go), and the others answer UNIMPLEMENTED through the embedded
// type.
type grpcService struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
	s *Server
}

func (g *grpcService) ServerLive(context.Context, *inferencepb.ServerLiveRequest) (*inferencepb.ServerLiveResponse, error) {
	return &inferencepb.ServerLiveResponse{Live: true}, nil
}

func (g *grpcService) ServerReady(context.Context, *inferencepb.ServerReadyRequest) (*inferencepb.ServerReadyResponse, error) {
	// Ready unless a model failed to load (model_repository).
	return &inferencepb.ServerReadyResponse{Ready: g.s.catalog.ready()}, nil
}

func (g *grpcService) ModelReady(_ context.Context, req *inferencepb.ModelReadyRequest) (*inferencepb.ModelReadyResponse, error) {
	if _, _, err := g.s.lookup(req.GetName(), req.GetVersion()); err != nil {
		if errors.Is(err, errNotReady) {
			return &inferencepb.ModelReadyResponse{Ready: false}, nil
		}
		return nil, toStatus(err)
	}
	return &inferencepb.ModelReadyResponse{Ready: true}, nil
}

func (g *grpcService) ServerMetadata(context.Context, *inferencepb.ServerMetadataRequest) (*inferencepb.ServerMetadataResponse, error) {
	md := g.s.serverMeta
	return oip.ServerMetadataToProto(&md), nil
}

func (g *grpcService) ModelMetadata(_ context.Context, req *inferencepb.ModelMetadataRequest) (*inferencepb.ModelMetadataResponse, error) {
	md, err := g.s.repo.Metadata(req.GetName(), req.GetVersion())
	if nr, ok := g.s.catalog.metadata(req.GetName()); err != nil && ok {
		md, err = nr, nil // known, though not ready
	}
	if err != nil {
		return nil, toStatus(err)
	}
	return oip.ModelMetadataToProto(&md), nil
}

func (g *grpcService) ModelInfer(ctx context.Context, pb *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	s := g.s
	m, version, err := s.lookup(pb.GetModelName(), pb.GetModelVersion())
	if err != nil {
		return nil, toStatus(err)
	}
	req, usedRaw, err := oip.FromProtoRequest(pb, oip.Limits{MaxElements: s.cfg.MaxTensorElements})
	if err != nil {
		// Counted as a failure of the version; infer records the rest.
		s.stats.of(pb.GetModelName(), version).failed(0)
		return nil, toStatus(fmt.Errorf("decode request: %w", err))
	}
	req.Model, req.Version = pb.GetModelName(), version
	var reuse [][]byte
	if grpcViews {
		// pb's bytes are the collector's, unchanged until the answer is
		// marshalled: a raw BYTES output viewing them (identity_bytes)
		// is answered with them instead of a new encoding.
		reuse = pb.GetRawInputContents()
	}
	resp, err := s.infer(ctx, m, version, req)
	if err != nil {
		return nil, toStatus(err)
	}
	// Answer in the form the client used; ToProtoResponse forces raw for
	// FP16/BF16 outputs, which have no typed field.
	out, err := oip.ToProtoResponseReusing(resp, usedRaw, reuse)
	if err != nil {
		return nil, toStatus(fmt.Errorf("encode response: %w", err))
	}
	return out, nil
}

// toStatus converts an error to a gRPC status error with the mapped code.
func toStatus(err error) error {
	return status.Error(grpcCode(err), err.Error())
}

// unaryInterceptor records ModelInfer calls in the metrics and turns a panic
// in any unary handler into INTERNAL. It is one interceptor rather than a
// chain of two so that a call costs no extra closure; the metrics are taken
// outside the recovery, so that recovered panics are counted as INTERNAL.
func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod != inferencepb.GRPCInferenceService_ModelInfer_FullMethodName {
		return s.recoverUnary(ctx, req, info, handler)
	}
	start := time.Now()
	s.metrics.inflight.Add(1)
	var name string
	if r, ok := req.(*inferencepb.ModelInferRequest); ok {
		name = r.GetModelName()
	}
	resp, err := s.recoverUnary(ctx, req, info, handler)
	s.metrics.inflight.Add(-1)
	code := status.Code(err)
	if code == codes.Internal || code == codes.Unknown {
		s.log.Error("gRPC inference failed", "model", name, "code", code, "err", err)
	}
	s.metrics.observe(s.modelLabel(name), "grpc", grpcCodeName(code), time.Since(start))
	return resp, err
}

// recoverUnary calls a unary handler, turning a panic into INTERNAL.
func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("gRPC handler panicked", "method", info.FullMethod, "panic", p, "stack", string(debug.Stack()))
			resp, err = nil, status.Errorf(codes.Internal, "internal error: %s panicked: %v", info.FullMethod, p)
		}
	}()
	return handler(ctx, req)
}

// recoverStreamInterceptor turns a panic in a streaming handler into
// INTERNAL.
func (s *Server) recoverStreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("gRPC stream handler panicked", "method", info.FullMethod, "panic", p, "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "internal error: %s panicked: %v", info.FullMethod, p)
		}
	}()
	return handler(srv, ss)
}
