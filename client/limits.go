package client

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// A gRPC message's size does not bound what decoding it costs: each bytes,
// string or message field becomes a slice, string or struct of its own, so
// a 6 MB ModelInferResponse of a million 4-byte raw_output_contents entries
// decodes to about 40 MB in a million allocations. Before decoding, the
// client counts those fields on the wire (decodedSize) and refuses a
// message whose decoded size exceeds Options.MaxMessageBytes, as grpc-go
// refuses one whose wire size does.

// entryCost is what a decoded bytes, string or message field costs in
// allocations beyond its bytes: decoding a million 4-byte raw entries
// allocates 135 bytes for each (its slice header, its share of the list's
// growth, the allocation's rounding).
const entryCost = 128

// maxWireDepth bounds nested messages walked, as protobuf's own decoder
// bounds recursion.
const maxWireDepth = 100

// decodedSize is about what decoding b as a message of md allocates: its
// length, entryCost for every bytes, string and message field at any depth,
// and what repeated numbers take beyond their wire bytes (a one-byte varint
// of an int64 list takes eight). It stops counting once the size passes
// limit. What it cannot walk is left to protobuf's decoder to refuse.
func decodedSize(b []byte, md protoreflect.MessageDescriptor, limit int64) int64 {
	size := int64(len(b))
	addDecoded(&size, b, md, limit, 0)
	return size
}

func addDecoded(size *int64, b []byte, md protoreflect.MessageDescriptor, limit int64, depth int) {
	for len(b) > 0 && *size <= limit {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return
			}
			b = b[n:]
			if fd != nil && fd.IsList() {
				*size += max(0, elementSize(fd.Kind())-int64(n))
			}
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if fd == nil {
			continue // unknown: kept as bytes, counted by its length
		}
		switch k := fd.Kind(); k {
		case protoreflect.BytesKind, protoreflect.StringKind:
			*size += entryCost
		case protoreflect.MessageKind, protoreflect.GroupKind:
			*size += entryCost
			if depth < maxWireDepth {
				addDecoded(size, v, fd.Message(), limit, depth+1)
			}
		case protoreflect.FloatKind, protoreflect.DoubleKind, protoreflect.Fixed32Kind,
			protoreflect.Fixed64Kind, protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
			// a packed list of fixed-size numbers: as large as on the wire
		default: // a packed list of varints: one ends at each byte below 0x80
			var count int64
			for _, c := range v {
				if c < 0x80 {
					count++
				}
			}
			*size += max(0, count*elementSize(k)-int64(len(v)))
		}
	}
}

// elementSize is the bytes a decoded number of kind k takes in a list.
func elementSize(k protoreflect.Kind) int64 {
	switch k {
	case protoreflect.BoolKind:
		return 1
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind, protoreflect.EnumKind,
		protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return 4
	}
	return 8
}

// checkDecodedSize refuses a message of md that would decode to more than
// max bytes, with an error wrapping ErrResponseTooLarge.
func checkDecodedSize(b []byte, md protoreflect.MessageDescriptor, max int64) error {
	if size := decodedSize(b, md, max); size > max {
		return fmt.Errorf("%w: a %d-byte %s message decodes to more than %d bytes (--grpc-max-message-bytes): too many bytes, string or message fields",
			ErrResponseTooLarge, len(b), md.Name(), max)
	}
	return nil
}

// inferResponse describes ModelInferResponse, the message of a kept answer.
var inferResponse = (*inferencepb.ModelInferResponse)(nil).ProtoReflect().Descriptor()

// checkKeptAnswer refuses a kept ModelInferResponse (PreparedGRPCInfer)
// that would decode to more than max bytes, as the grpc-go codec refuses
// a decoded one: keeping it is for decoding it.
func checkKeptAnswer(op string, b []byte, max int64) error {
	if err := checkDecodedSize(b, inferResponse, max); err != nil {
		return &Error{Op: op, GRPCCode: codes.ResourceExhausted, Message: err.Error(), Err: err}
	}
	return nil
}

// boundedCodec is protobuf's codec for the client's grpc-go connections,
// refusing a response whose decoded size exceeds max (see decodedSize).
// grpc-go reports its error as INTERNAL "failed to unmarshal".
type boundedCodec struct {
	encoding.CodecV2
	max int64
}

func newBoundedCodec(max int64) boundedCodec {
	return boundedCodec{CodecV2: encoding.GetCodecV2("proto"), max: max}
}

func (c boundedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if err := checkDecodedSize(b, m.ProtoReflect().Descriptor(), c.max); err != nil {
		return err
	}
	return proto.Unmarshal(b, m)
}

// headerCapError says first, and names the flag that raises the cap, when
// net/http refused a header block over Transport.MaxResponseHeaderBytes
// (its error has no sentinel, and its text comes after the URL).
func headerCapError(err error, max int64) error {
	if strings.Contains(err.Error(), "server response headers exceeded") {
		return fmt.Errorf("response headers exceed %d bytes (--max-header-bytes): %w", max, err)
	}
	return err
}

// bodyCapMessage is the one message of an answer refused for a body over
// Options.MaxResponseBytes, naming the flag that raises it.
func bodyCapMessage(max int64) string {
	return fmt.Sprintf("response body exceeds %d bytes (--max-body-bytes)", max)
}
