//go:build !linux

package rawtcp

import "net"

// Wrap returns nc: raw calls are implemented on Linux only.
func Wrap(nc net.Conn) net.Conn { return nc }
