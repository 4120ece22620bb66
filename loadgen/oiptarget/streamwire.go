package oiptarget

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/oipkit/oipkit/oip"
)

// The streaming hot path reads only what decides a request's fate from a
// ModelStreamInferResponse — error_message, the response's id, the
// triton_final_response parameter and whether it has outputs — straight
// from the wire bytes, without building the message: the figures a stream
// is measured by do not need the tensors.

// Field numbers of inference.proto (grpc_service.proto).
const (
	fieldStreamErrorMessage  = 1 // ModelStreamInferResponse.error_message
	fieldStreamInferResponse = 2 // ModelStreamInferResponse.infer_response
	fieldResponseID          = 3 // ModelInferResponse.id
	fieldResponseParameters  = 4 // ModelInferResponse.parameters (map entries)
	fieldResponseOutputs     = 5 // ModelInferResponse.outputs
	fieldResponseRawOutputs  = 6 // ModelInferResponse.raw_output_contents
	fieldMapKey              = 1
	fieldMapValue            = 2
	fieldParamBool           = 1 // InferParameter.bool_param
	fieldRequestID           = 3 // ModelInferRequest.id
)

// streamMessage is what the hot path reads of one stream response. Its
// byte slices point into the received buffer and are valid until the next
// receive.
type streamMessage struct {
	errMsg, id        []byte
	final, finalKnown bool
	outputs           bool
}

var errTruncated = errors.New("truncated or malformed protobuf")

// scan reads b, a ModelStreamInferResponse, into m.
func (m *streamMessage) scan(b []byte) error {
	*m = streamMessage{}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == fieldStreamErrorMessage && typ == protowire.BytesType:
			m.errMsg = v
		case num == fieldStreamInferResponse && typ == protowire.BytesType:
			return eachField(v, m.response)
		}
		return nil
	})
}

// scanResponse reads b, a plain ModelInferResponse (MLServer's stream
// shape), into m.
func (m *streamMessage) scanResponse(b []byte) error {
	*m = streamMessage{}
	return eachField(b, m.response)
}

// response reads one field of a ModelInferResponse.
func (m *streamMessage) response(num protowire.Number, typ protowire.Type, v []byte) error {
	if typ != protowire.BytesType {
		return nil
	}
	switch num {
	case fieldResponseID:
		m.id = v
	case fieldResponseOutputs, fieldResponseRawOutputs:
		m.outputs = true
	case fieldResponseParameters:
		var key []byte
		if err := eachField(v, func(n protowire.Number, t protowire.Type, x []byte) error {
			if t == protowire.BytesType && n == fieldMapKey {
				key = x
			}
			return nil
		}); err != nil {
			return err
		}
		if string(key) != oip.ParamTritonFinalResponse {
			return nil
		}
		// As protobuf reads it: a later entry of the key replaces an
		// earlier one whole, the values of one entry merge, and the last
		// member of InferParameter's oneof is the one set.
		m.final, m.finalKnown = false, false
		return eachField(v, func(n protowire.Number, t protowire.Type, x []byte) error {
			if t == protowire.BytesType && n == fieldMapValue {
				return eachField(x, m.param)
			}
			return nil
		})
	}
	return nil
}

// param reads one field of the triton_final_response InferParameter.
func (m *streamMessage) param(n protowire.Number, t protowire.Type, x []byte) error {
	switch {
	case n == fieldParamBool && t == protowire.VarintType:
		m.final, m.finalKnown = len(x) > 0 && x[0] != 0, true
	case (n == 2 || n == 5) && t == protowire.VarintType, n == 3 && t == protowire.BytesType, n == 4 && t == protowire.Fixed64Type:
		m.final, m.finalKnown = false, false // int64, uint64, string or double_param
	}
	return nil
}

// eachField calls fn with every field of the message b: for a length-
// delimited field its contents, for a varint its (single-byte-or-more)
// encoding, for others nil. It does not allocate.
func eachField(b []byte, fn func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", errTruncated, protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			x, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: %v", errTruncated, protowire.ParseError(n))
			}
			v, b = x, b[n:]
		case protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: %v", errTruncated, protowire.ParseError(n))
			}
			v = b[:n]
			if x == 0 {
				v = b[:0]
			}
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: %v", errTruncated, protowire.ParseError(n))
			}
			b = b[n:]
		}
		if err := fn(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}

// appendRequestID appends a ModelInferRequest id field to an encoded
// request: protobuf keeps the last occurrence of a scalar field, so this
// sets the id without re-encoding the request.
func appendRequestID(b, id []byte) []byte {
	b = protowire.AppendTag(b, fieldRequestID, protowire.BytesType)
	return protowire.AppendBytes(b, id)
}

// emptyFinalParam is the map entry triton_enable_empty_final_response=true
// of an encoded ModelInferRequest, appended to every streamed request. A
// decoupled model often ends a request with a flags-only send (Triton's
// python backend examples do), which Triton forwards only as an empty final
// response, and only when asked: without it the end of the request never
// reaches the client. perf_analyzer asks too; servers that do not know the
// parameter ignore it.
var emptyFinalParam = appendBoolParam(nil, oip.ParamTritonEnableEmptyFinalResponse, true)

// appendParam appends the parameters map entry key → value (an encoded
// InferParameter) to an encoded ModelInferRequest; a later entry of a key
// replaces an earlier one.
func appendParam(b []byte, key string, value []byte) []byte {
	n := protowire.SizeTag(fieldMapKey) + protowire.SizeBytes(len(key)) + protowire.SizeTag(fieldMapValue) + protowire.SizeBytes(len(value))
	b = protowire.AppendTag(b, fieldRequestParameters, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, fieldMapKey, protowire.BytesType)
	b = protowire.AppendString(b, key)
	b = protowire.AppendTag(b, fieldMapValue, protowire.BytesType)
	return protowire.AppendBytes(b, value)
}

// appendBoolParam appends the parameter key = on (bool_param).
func appendBoolParam(b []byte, key string, on bool) []byte {
	var v [4]byte
	return appendParam(b, key, protowire.AppendVarint(protowire.AppendTag(v[:0], fieldParamBool, protowire.VarintType), protowire.EncodeBool(on)))
}
