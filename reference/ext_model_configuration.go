package reference

import (
	"context"
	"net/http"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// Model configuration (Triton's model_configuration extension). Triton's
// perf_analyzer refuses to run without it, so the reference server answers it
// with the subset of Triton's ModelConfig that describes a model without
// batching: the metadata shapes are the full shapes (max_batch_size 0).

var extModelConfiguration = extension{
	name:       specs.ExtModelConfiguration,
	advertised: true,
	rest: []extRoute{
		{method: http.MethodGet, path: "/v2/models/{m}/config", serve: (*Server).serveModelConfig},
		{method: http.MethodGet, path: "/v2/models/{m}/versions/{v}/config", serve: (*Server).serveModelConfig},
	},
	grpc: []string{"ModelConfig"},
}

// serveModelConfig answers GET /v2/models/{m}[/versions/{v}]/config.
func (s *Server) serveModelConfig(w *statusWriter, _ *http.Request, p routeParams) {
	md, err := s.repo.Metadata(p.model, p.version)
	if err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, modelConfigREST(md, s.decoupled(p.model, p.version), s.instances.count(md.Name)))
}

func (g *grpcService) ModelConfig(_ context.Context, req *inferencepb.ModelConfigRequest) (*inferencepb.ModelConfigResponse, error) {
	md, err := g.s.repo.Metadata(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, toStatus(err)
	}
	return &inferencepb.ModelConfigResponse{Config: modelConfigProto(md, g.s.decoupled(req.GetName(), req.GetVersion()), g.s.instances.count(md.Name))}, nil
}

// modelConfigJSON is the REST form of the configuration; field names follow
// Triton's model_config.proto, dims are JSON numbers as Triton writes them.
type modelConfigJSON struct {
	Name         string            `json:"name"`
	Platform     string            `json:"platform"`
	Backend      string            `json:"backend"`
	MaxBatchSize int               `json:"max_batch_size"`
	Input        []modelTensorJSON `json:"input"`
	Output       []modelTensorJSON `json:"output"`
	// TransactionPolicy is set for decoupled models, which perf_analyzer
	// then drives over a ModelStreamInfer stream.
	TransactionPolicy *transactionPolicyJSON `json:"model_transaction_policy,omitempty"`
	// InstanceGroup is listed for a model with limited execution
	// instances (instances.go); a model without a limit has none.
	InstanceGroup []instanceGroupJSON `json:"instance_group,omitempty"`
}

type instanceGroupJSON struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Count int    `json:"count"`
}

type transactionPolicyJSON struct {
	Decoupled bool `json:"decoupled"`
}

type modelTensorJSON struct {
	Name     string  `json:"name"`
	DataType string  `json:"data_type"`
	Dims     []int64 `json:"dims"`
}

// configDataType maps an OIP datatype to Triton's DataType (BYTES is
// TYPE_STRING there).
func configDataType(d tensor.Datatype) inferencepb.DataType {
	if d == tensor.Bytes {
		return inferencepb.DataType_TYPE_STRING
	}
	if v, ok := inferencepb.DataType_value["TYPE_"+string(d)]; ok {
		return inferencepb.DataType(v)
	}
	return inferencepb.DataType_TYPE_INVALID
}

func modelConfigREST(md oip.ModelMetadata, decoupled bool, instances int) modelConfigJSON {
	c := modelConfigJSON{Name: md.Name, Platform: md.Platform, Backend: "oipkit", Input: []modelTensorJSON{}, Output: []modelTensorJSON{}}
	if instances > 0 {
		c.InstanceGroup = []instanceGroupJSON{{Name: md.Name, Kind: inferencepb.ModelInstanceGroup_KIND_CPU.String(), Count: instances}}
	}
	if decoupled {
		c.TransactionPolicy = &transactionPolicyJSON{Decoupled: true}
	}
	for _, t := range md.Inputs {
		c.Input = append(c.Input, modelTensorJSON{t.Name, configDataType(t.Datatype).String(), t.Shape})
	}
	for _, t := range md.Outputs {
		c.Output = append(c.Output, modelTensorJSON{t.Name, configDataType(t.Datatype).String(), t.Shape})
	}
	return c
}

func modelConfigProto(md oip.ModelMetadata, decoupled bool, instances int) *inferencepb.ModelConfig {
	c := &inferencepb.ModelConfig{Name: md.Name, Platform: md.Platform, Backend: "oipkit"}
	if instances > 0 {
		c.InstanceGroup = []*inferencepb.ModelInstanceGroup{{Name: md.Name, Kind: inferencepb.ModelInstanceGroup_KIND_CPU, Count: int32(min(instances, 1<<31-1))}}
	}
	if decoupled {
		c.ModelTransactionPolicy = &inferencepb.ModelTransactionPolicy{Decoupled: true}
	}
	for _, t := range md.Inputs {
		c.Input = append(c.Input, &inferencepb.ModelInput{Name: t.Name, DataType: configDataType(t.Datatype), Dims: t.Shape})
	}
	for _, t := range md.Outputs {
		c.Output = append(c.Output, &inferencepb.ModelOutput{Name: t.Name, DataType: configDataType(t.Datatype), Dims: t.Shape})
	}
	return c
}

// decoupled reports whether a model (version "" = the server's choice) is
// decoupled; an unknown one is not.
func (s *Server) decoupled(name, version string) bool {
	m, _, err := s.repo.Lookup(name, version)
	if err != nil {
		return false
	}
	_, ok := m.(model.Decoupled)
	return ok
}
