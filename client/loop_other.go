//go:build !linux

package client

import "context"

// loop needs epoll: elsewhere the blocking path sends every request.
func (h *http1Client) loop(ctx context.Context, n int, d LoopDriver) error {
	return ErrNoEventLoop
}

func closeFD(fd int) {}
