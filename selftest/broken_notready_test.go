package selftest

import (
	"context"
	"net/http"

	"google.golang.org/grpc"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers that get the never_ready fixture (deployed, never ready; the
// reference server hosts it) wrong in one way each (conformance/suite/notready.go).

func init() {
	breakages = append(breakages, notReadyBreakages...)
	variants = append(variants, notReadyVariants...)
}

// notReadyVariants take the other reading of server readiness: a
// server is ready when all its models are (REST's wording; Triton's strict
// readiness, MLServer), so never_ready keeps it not ready, for good. No
// requirement may fail: OIP-REST-HEALTH-005/-014 and OIP-GRPC-HEALTH-002
// note it.
var notReadyVariants = []breakage{
	{
		name: "never-ready-server-not-ready",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && r.URL.Path == "/v2/health/ready" {
				w.WriteHeader(http.StatusBadRequest)
				return true
			}
			return false
		}},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if _, ok := req.(*pb.ServerReadyRequest); ok {
				return &pb.ServerReadyResponse{Ready: false}, nil
			}
			return h(ctx, req)
		},
	},
}

var notReadyBreakages = []breakage{
	{
		name: "rest-never-ready-model-ready-200",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && r.URL.Path == "/v2/models/never_ready/ready" {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"name":"never_ready","ready":true}`))
				return true
			}
			return false
		}},
		// A success claims readiness: OIP-REST-HEALTH-010 alone; how a
		// "false" is said (OIP-REST-HEALTH-003) is not reached.
		failed: []string{"OIP-REST-HEALTH-010"},
	},
	{
		name: "grpc-never-ready-model-ready-true",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelReadyRequest); ok && r.Name == "never_ready" {
				return &pb.ModelReadyResponse{Ready: true}, nil
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-HEALTH-004"},
	},
	{
		name: "rest-never-ready-infer-200",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if isInfer(r) && r.URL.Path == "/v2/models/never_ready/infer" {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"id":"oipkit","model_name":"never_ready","outputs":[]}`))
				return true
			}
			return false
		}},
		// OIP-REST-INFER-025 is implied: a warning, not a failure.
		warned: []string{"OIP-REST-INFER-025"},
	},
	{
		name: "rest-never-ready-infer-500",
		rest: fault500(func(r *http.Request, _ string) bool {
			return isInfer(r) && r.URL.Path == "/v2/models/never_ready/infer"
		}),
		failed: []string{"OIP-REST-ERR-003"},
	},
	{
		name: "grpc-never-ready-infer-ok",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok && r.ModelName == "never_ready" {
				return &pb.ModelInferResponse{ModelName: "never_ready", Id: r.Id}, nil
			}
			return h(ctx, req)
		},
		// An OK without a result is also a failure reported in-band
		// (OIP-GRPC-SVC-002, as for every refusal answered OK).
		failed: []string{"OIP-GRPC-SVC-002"},
		warned: []string{"OIP-GRPC-INFER-015"},
	},
}
