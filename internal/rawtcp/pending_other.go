//go:build !linux

package rawtcp

import "net"

// Pending reports whether bytes wait to be read on c: it cannot tell on
// other systems, so it reports false.
func Pending(c net.Conn) bool { return false }
