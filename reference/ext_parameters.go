package reference

import (
	"strings"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
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
