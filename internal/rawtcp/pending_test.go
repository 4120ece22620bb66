package rawtcp_test

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/oipkit/oipkit/internal/rawtcp"
)

// TestPending: bytes the peer wrote are pending until read, on a wrapped
// connection and a plain one; none, or only the peer's close, are not.
func TestPending(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pending tells only on Linux")
	}
	w, peer := pair(t)
	for _, c := range []struct {
		name      string
		conn, end net.Conn
	}{{"wrapped", w, peer}, {"plain", peer, w}} {
		if rawtcp.Pending(c.conn) {
			t.Fatalf("%s: pending before the peer wrote", c.name)
		}
		if _, err := c.end.Write([]byte("POST")); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); !rawtcp.Pending(c.conn); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the peer's bytes never pending", c.name)
			}
		}
		b := make([]byte, 8)
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := io.ReadFull(c.conn, b[:4]); err != nil || string(b[:n]) != "POST" {
			t.Fatalf("%s: read after Pending: %q, %v", c.name, b[:n], err)
		}
		if rawtcp.Pending(c.conn) {
			t.Fatalf("%s: pending after every byte was read", c.name)
		}
	}
	peer.Close()
	w.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := w.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after the peer's close: %v, want EOF", err)
	}
	if rawtcp.Pending(w) {
		t.Fatal("the peer's close reported as pending bytes")
	}
	if rawtcp.Pending(nil) {
		t.Fatal("nil reported pending")
	}
}
