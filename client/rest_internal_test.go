package client

import (
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
)

// TestStaleConn: the errors net/http gives for a keep-alive connection
// the server closed while a request was written are resent; others are not.
func TestStaleConn(t *testing.T) {
	wrap := func(err error) error { // as net/http reports a failed write of the body
		return &url.Error{Op: "Post", URL: "http://127.0.0.1/v2/models/m/infer",
			Err: &net.OpError{Op: "readfrom", Net: "tcp", Err: &net.OpError{Op: "write", Net: "tcp", Err: err}}}
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{wrap(syscall.ECONNRESET), true},
		{wrap(syscall.EPIPE), true},
		{wrap(net.ErrClosed), true}, // "use of closed network connection": seen on KServe
		{&url.Error{Op: "Post", Err: io.EOF}, true},
		{&url.Error{Op: "Post", Err: io.ErrUnexpectedEOF}, true},
		{wrap(syscall.ECONNREFUSED), false},
		{&url.Error{Op: "Post", Err: errors.New("malformed HTTP response")}, false},
	} {
		if got := staleConn(c.err); got != c.want {
			t.Errorf("staleConn(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
