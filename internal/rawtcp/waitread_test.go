package rawtcp_test

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/oipkit/oipkit/internal/rawtcp"
)

// TestWaitRead: WaitRead ends at the read deadline while nothing came,
// returns once the peer wrote without taking any byte, and returns for the
// peer's close, which the next Read reports as EOF.
func TestWaitRead(t *testing.T) {
	c, peer := pair(t)
	rc, ok := c.(*rawtcp.Conn)
	if !ok {
		t.Skip("the raw layer is off or not implemented here")
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if err := rc.WaitRead(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("WaitRead with nothing to read: %v, want os.ErrDeadlineExceeded", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Write([]byte("answer")); err != nil {
		t.Fatal(err)
	}
	if err := rc.WaitRead(); err != nil {
		t.Fatalf("WaitRead after the peer wrote: %v", err)
	}
	if err := rc.WaitRead(); err != nil { // nothing was taken: still readable
		t.Fatalf("second WaitRead: %v", err)
	}
	b := make([]byte, 16)
	if n, err := c.Read(b); err != nil || string(b[:n]) != "answer" {
		t.Fatalf("Read after WaitRead = %q, %v; want every byte the peer wrote", b[:n], err)
	}
	peer.Close()
	if err := rc.WaitRead(); err != nil {
		t.Fatalf("WaitRead after the peer's close: %v", err)
	}
	if _, err := c.Read(b); err != io.EOF {
		t.Fatalf("Read after the peer's close: %v, want EOF", err)
	}
}
