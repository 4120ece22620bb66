package engine

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// TestResponseOf: Send makes an RPC built unsent from its method name
// alone, so the response type comes from the registered descriptor.
func TestResponseOf(t *testing.T) {
	for method, want := range map[string]proto.Message{
		methodPrefix + "TraceSetting":                 &pb.TraceSettingResponse{},
		methodPrefix + "SystemSharedMemoryUnregister": &pb.SystemSharedMemoryUnregisterResponse{},
		methodPrefix + "RepositoryModelLoad":          &pb.RepositoryModelLoadResponse{},
	} {
		got, err := responseOf(method)
		if err != nil || got.ProtoReflect().Descriptor().FullName() != want.ProtoReflect().Descriptor().FullName() {
			t.Errorf("%s: %T, %v; want %T", method, got, err, want)
		}
	}
	for _, method := range []string{methodPrefix + "NoSuchRPC", "/no.Such/Service", "ModelInfer", ""} {
		if got, err := responseOf(method); err == nil {
			t.Errorf("%q: %T, no error", method, got)
		}
	}
}
