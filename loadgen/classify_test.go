package loadgen

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/client"
)

// TestClassifyRefused: a request no server took (its connection could not
// be made, or the server said it did not process the gRPC call) is
// "refused"; one cut after it went out stays a transport failure or its
// gRPC code.
func TestClassifyRefused(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&client.Error{Op: "Infer", Err: dial}, "refused"},
		{&client.Error{Op: "Infer", GRPCCode: codes.Unavailable, Message: dial.Error(), Err: dial}, "refused"},
		{&client.Error{Op: "Infer", GRPCCode: codes.Unavailable, Message: "the server sent GOAWAY (NO_ERROR) before this call", Err: client.ErrNotProcessed}, "refused"},
		{&client.Error{Op: "Infer", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNRESET)}}, "refused"},
		{&client.Error{Op: "Infer", Err: reset}, "transport"},
		{&client.Error{Op: "Infer", GRPCCode: codes.Unavailable, Message: "connection closed", Err: errors.New("connection closed")}, "grpc_Unavailable"},
		{&client.Error{Op: "Infer", HTTPStatus: 503}, "http_503"},
	} {
		if got := classify(c.err).String(); got != c.want {
			t.Errorf("classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}
