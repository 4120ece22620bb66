package rawtcp_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/oipkit/oipkit/internal/rawtcp"
)

// pair returns a wrapped client connection and the server's end of it.
func pair(t *testing.T) (net.Conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	w := rawtcp.Wrap(c)
	t.Cleanup(func() { w.Close(); peer.Close() })
	return w, peer.(*net.TCPConn)
}

func TestWrapIsRawOnLinux(t *testing.T) {
	c, _ := pair(t)
	_, raw := c.(*rawtcp.Conn)
	if raw != (runtime.GOOS == "linux" && rawtcp.Enabled()) {
		t.Fatalf("Wrap returned %T on %s (%s=%q)", c, runtime.GOOS, rawtcp.EnvSwitch, os.Getenv(rawtcp.EnvSwitch))
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := rawtcp.Wrap(a); got != a {
		t.Fatalf("Wrap of a non-TCP connection returned %T, want it unchanged", got)
	}
}

// TestLargeTransferBothWays writes more than the socket buffers hold in
// both directions at once, so writes meet EAGAIN and wait in the netpoller
// while a read runs on the same connection.
func TestLargeTransferBothWays(t *testing.T) {
	c, peer := pair(t)
	const size = 16 << 20
	out := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	echoed := make(chan error, 1)
	go func() { // the peer sends its own stream while draining ours
		go peer.Write(out)
		_, err := io.CopyN(io.Discard, peer, size)
		echoed <- err
	}()
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, size)
		_, err := io.ReadFull(c, b)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	if n, err := c.Write(out); err != nil || n != size {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, size)
	}
	if err := <-echoed; err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, out) {
		t.Fatal("bytes read differ from bytes written")
	}
}

func TestEOF(t *testing.T) {
	c, peer := pair(t)
	peer.Write([]byte("last"))
	peer.Close()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "last" {
		t.Fatalf("ReadAll = %q, %v; want \"last\", nil", b, err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF = %d, %v", n, err)
	}
}

func TestDeadlines(t *testing.T) {
	c, _ := pair(t)
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read past its deadline: %v is not a timeout net.Error", err)
	}
	// A write that fills the buffers with nobody reading ends at its deadline.
	c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = c.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
}

func TestClosedAndReset(t *testing.T) {
	c, peer := pair(t)
	peer.SetLinger(0) // close sends a reset
	peer.Close()
	time.Sleep(20 * time.Millisecond)
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Read from a reset connection: %v, want ECONNRESET", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" {
		t.Fatalf("Read error %v is not a *net.OpError of read", err)
	}
	// Writes to the reset connection fail with an error, not a SIGPIPE.
	err = nil
	for i := 0; i < 3 && err == nil; i++ {
		_, err = c.Write([]byte("x"))
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Write to a reset connection: %v, want EPIPE or ECONNRESET", err)
	}
	c.Close()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
}

// TestCloseUnblocksRead: a Read waiting in the netpoller ends when another
// goroutine closes the connection.
func TestCloseUnblocksRead(t *testing.T) {
	c, _ := pair(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read ended by Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still blocked after Close")
	}
}

func TestNoAllocations(t *testing.T) {
	c, peer := pair(t)
	msg, in, back := []byte("ping"), make([]byte, 4), make([]byte, 4)
	n := testing.AllocsPerRun(200, func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, back); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Write(back); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, in); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%.0f allocations per round trip, want 0", n)
	}
}

// TestSwitchedOff runs this package's tests again in a process with the
// layer switched off: Wrap and Listener return plain connections, and every
// transfer, deadline and error case still holds over them.
func TestSwitchedOff(t *testing.T) {
	if !rawtcp.Enabled() {
		t.Skip("already switched off")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^Test", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), rawtcp.EnvSwitch+"=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tests with %s=off: %v\n%s", rawtcp.EnvSwitch, err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestLargeTransferBothWays")) || !bytes.Contains(out, []byte("--- SKIP: TestSwitchedOff")) {
		t.Fatalf("tests with %s=off did not run:\n%s", rawtcp.EnvSwitch, out)
	}
}
