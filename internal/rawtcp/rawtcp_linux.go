package rawtcp

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Wrap returns nc with raw reads and writes when it is a *net.TCPConn, and
// nc otherwise (or when the layer is switched off, EnvSwitch).
func Wrap(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok || !enabled {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &Conn{TCPConn: tc, rc: rc}
	c.r.fn, c.w.fn, c.peek.fn = c.r.read, c.w.write, c.peek.readable
	return c
}

// Conn is a TCP connection whose Read and Write are raw system calls. Like
// net.Conn, one Read and one Write may run at the same time.
type Conn struct {
	*net.TCPConn
	rc   syscall.RawConn
	r    call
	w    call
	peek call // WaitRead's
}

// call is the state of a pending read or write; fn is bound once, so a call
// allocates nothing.
type call struct {
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

func (c *call) read(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.p[0])), uintptr(len(c.p)))
		switch e {
		case 0:
			c.n = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait in the netpoller
		}
		c.errno = e
		return true
	}
}

// readable peeks at one byte without taking it: it reports false (wait in
// the netpoller) while nothing can be read, true once bytes, the peer's
// close or an error wait for the next Read. Called again after the
// netpoller woke the wait, it reports true without a system call: a wake-up
// means readable but for a rare spurious one, after which the Read that
// follows simply waits, so a waited-for answer costs no more system calls
// than a Read that waits.
func (c *call) readable(fd uintptr) bool {
	if c.n > 0 {
		return true
	}
	c.n++
	var b [1]byte
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		return true
	}
}

func (c *call) write(fd uintptr) bool {
	for len(c.p) > 0 {
		// MSG_NOSIGNAL: a reset peer is an EPIPE error, not a SIGPIPE.
		n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&c.p[0])), uintptr(len(c.p)),
			syscall.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			c.n += int(n)
			c.p = c.p[n:]
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		c.errno = e
		return true
	}
	return true
}

func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r := &c.r
	r.p, r.n, r.errno = p, 0, 0
	err := c.rc.Read(r.fn)
	r.p = nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case r.errno != 0:
		return 0, c.opError("read", r.errno)
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

// WaitRead waits until a Read would not block — bytes, the peer's close or
// an error are waiting — without reading anything, so a connection waiting
// for an answer needs no buffer to wait with (the "zero-byte read"). It
// ends with the read deadline as Read does; the error of a failed
// connection is left for the Read that follows. After a rare spurious
// wake-up it returns early, and that Read waits instead.
func (c *Conn) WaitRead() error {
	c.peek.n = 0
	if err := c.rc.Read(c.peek.fn); err != nil {
		return c.opError("read", err)
	}
	return nil
}

func (c *Conn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w := &c.w
	w.p, w.n, w.errno = p, 0, 0
	err := c.rc.Write(w.fn)
	n := w.n
	w.p = nil
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case w.errno != 0:
		return n, c.opError("write", w.errno)
	}
	return n, nil
}

// opError wraps err as net.Conn's methods do, so errors.Is finds the errno,
// os.ErrDeadlineExceeded and net.ErrClosed as before.
func (c *Conn) opError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = &os.SyscallError{Syscall: op, Err: errno}
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
