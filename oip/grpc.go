package oip

import "github.com/oipkit/oipkit/specs/inferencepb"

// gRPC encodings of inference messages.

// ToProtoRequest converts req to a ModelInferRequest, with tensor data in
// raw_input_contents when raw is true and in typed contents otherwise. FP16
// and BF16 inputs force raw, since they have no typed field.
func ToProtoRequest(req *InferRequest, raw bool) (*inferencepb.ModelInferRequest, error) {
	panic("TODO")
}

// FromProtoRequest converts a ModelInferRequest. It enforces the raw-contents
// rules: raw_input_contents and typed contents are mutually exclusive, there
// is one raw entry per input in input order, and every size matches its
// shape. usedRaw reports which form the request used. Errors wrap ErrInvalid
// or ErrTooLarge.
func FromProtoRequest(pb *inferencepb.ModelInferRequest, lim Limits) (req *InferRequest, usedRaw bool, err error) {
	panic("TODO")
}

// ToProtoResponse converts resp to a ModelInferResponse, with data in
// raw_output_contents when raw is true and typed contents otherwise (FP16 and
// BF16 outputs force raw for the whole response, since the two forms are
// exclusive).
func ToProtoResponse(resp *InferResponse, raw bool) (*inferencepb.ModelInferResponse, error) {
	panic("TODO")
}

// FromProtoResponse converts a ModelInferResponse, accepting data in either
// raw_output_contents or typed contents (never both).
func FromProtoResponse(pb *inferencepb.ModelInferResponse) (*InferResponse, error) {
	panic("TODO")
}

// ParametersToProto converts parameters to the gRPC map; unsupported value
// kinds are an error.
func ParametersToProto(p Parameters) (map[string]*inferencepb.InferParameter, error) {
	panic("TODO")
}

// ParametersFromProto converts the gRPC parameter map.
func ParametersFromProto(m map[string]*inferencepb.InferParameter) Parameters {
	panic("TODO")
}

// MetadataToProto and the functions below convert metadata messages.
func ServerMetadataToProto(m *ServerMetadata) *inferencepb.ServerMetadataResponse { panic("TODO") }

// ServerMetadataFromProto converts a ServerMetadataResponse.
func ServerMetadataFromProto(pb *inferencepb.ServerMetadataResponse) *ServerMetadata { panic("TODO") }

// ModelMetadataToProto converts model metadata to a ModelMetadataResponse.
func ModelMetadataToProto(m *ModelMetadata) *inferencepb.ModelMetadataResponse { panic("TODO") }

// ModelMetadataFromProto converts a ModelMetadataResponse.
func ModelMetadataFromProto(pb *inferencepb.ModelMetadataResponse) *ModelMetadata { panic("TODO") }
