package reference

import (
	"context"
	"fmt"
	"strings"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/tensor"
)

// The parameters extension (Triton's): request parameters that are not
// protocol parameters reach the model as they are (model.Model.Infer's
// params), over REST and gRPC alike. Keys Triton reserves are not custom
// parameters: "headers" (forwarded HTTP/gRPC headers) and every "triton_"
// key the server does not define are refused (validateRequest), so that a
// client never mistakes one for a parameter its model saw. The fixture
// param_echo answers the custom parameter "echo", to show what the model
// received.

var extParameters = extension{name: specs.ExtParameters, advertised: true}

// reservedParameter says why key may not be a request parameter; "" when
// it may.
func reservedParameter(key string) string {
	switch {
	case key == "headers":
		return "is reserved for forwarded headers"
	case key == oip.ParamTritonEnableEmptyFinalResponse:
		return ""
	case strings.HasPrefix(key, "triton_"):
		return "uses the reserved prefix triton_"
	}
	return ""
}

// checkReserved refuses reserved keys among request parameters.
func checkReserved(p oip.Parameters) error {
	for k := range p {
		if why := reservedParameter(k); why != "" {
			return invalidf("request parameter %q %s", clipText(k), why)
		}
	}
	return nil
}

// paramEcho is the param_echo fixture: OUTPUT0 (BYTES [1]) is the request
// parameter "echo", a string; INPUT0 (INT32 [1]) is not read.
type paramEcho struct{ md oip.ModelMetadata }

const paramEchoKey = "echo"

func newParamEcho() model.Model {
	return paramEcho{md: oip.ModelMetadata{
		Name: "param_echo", Versions: []string{"1"}, Platform: model.Platform,
		Inputs:  []oip.TensorMetadata{{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}}},
		Outputs: []oip.TensorMetadata{{Name: "OUTPUT0", Datatype: tensor.Bytes, Shape: []int64{1}}},
	}}
}

func (m paramEcho) Metadata() oip.ModelMetadata { return m.md }

func (m paramEcho) Infer(_ context.Context, _ map[string]tensor.Tensor, params oip.Parameters) ([]tensor.Tensor, error) {
	v, ok := params[paramEchoKey].(string)
	if !ok {
		return nil, fmt.Errorf("%w: param_echo: the request parameter %q must be a string", model.ErrInvalidInput, paramEchoKey)
	}
	return []tensor.Tensor{{Name: "OUTPUT0", Datatype: tensor.Bytes, Shape: []int64{1}, Data: [][]byte{[]byte(v)}}}, nil
}
