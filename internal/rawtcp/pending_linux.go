package rawtcp

import (
	"net"
	"syscall"
)

// Pending reports whether bytes wait to be read on c, without reading them
// or waiting: a server closing an idle connection checks first that no
// request arrived on it. It is false when it cannot tell.
func Pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	var b [1]byte
	// Control, not Read: it does not wait for a Read blocked on c.
	rc.Control(func(fd uintptr) {
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}
