package client

import (
	"strings"
)

// HTTPBaseURL reads a REST address the way every oipkit command does: a
// base URL (http://host:port, https://host:port/prefix) or a bare
// host:port, which means http://host:port. It returns the base URL without
// a trailing slash.
func HTTPBaseURL(addr string) (string, error) {
	s := strings.TrimSpace(addr)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	return parseBaseURL(s)
}

// GRPCAddress checks a gRPC address, host:port; a URL is refused with the
// host:port to give instead.
func GRPCAddress(addr string) (string, error) {
	s := strings.TrimSpace(addr)
	return s, checkGRPCAddr(s)
}
