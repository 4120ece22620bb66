package client

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"

	"golang.org/x/net/http2"

	"github.com/oipkit/oipkit/internal/envswitch"
)

// The lean transport's large-message paths (issue 25). A megabyte message
// went through x/net's Framer twice over: each DATA frame was copied from
// the socket into a bufio.Reader, then into the Framer's frame buffer, then
// into the message; each request's DATA into the Framer's write buffer, then
// through a bufio.Writer in 32 KiB writes. Here an unpadded DATA frame is
// read by the client itself, its payload straight into the message (or
// dropped through a large scratch buffer), and a large DATA frame is written
// with one writev from the request's own bytes. Everything else, padded
// DATA included, still goes through the Framer.

// EnvH2CDirect names the environment variable that turns these paths off:
// with OIPKIT_H2C_DIRECT=off (or 0, false) every frame goes through x/net's
// Framer, as the fuzz tests' oracle does.
const EnvH2CDirect = "OIPKIT_H2C_DIRECT"

// h2cDirect is read once, for the process's life.
var h2cDirect = envswitch.On(EnvH2CDirect)

// h2cWritevMin is the smallest DATA payload written with writev: smaller
// ones are copied into the write buffer, where calls arriving together
// share one write.
const h2cWritevMin = 32 << 10

// h2cWriter buffers the connection's frames until a flush, and writes a
// large DATA frame in one writev with whatever is buffered before it.
type h2cWriter struct {
	nc   net.Conn
	buf  []byte
	vec  [2][]byte
	bufs net.Buffers
}

// net.Buffers writes with writev on a *net.TCPConn, and on rawtcp's
// connection, which embeds one.
func newH2CWriter(nc net.Conn) *h2cWriter {
	return &h2cWriter{nc: nc, buf: make([]byte, 0, 4<<10)}
}

func (w *h2cWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Flush writes what is buffered.
func (w *h2cWriter) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.nc.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// writeData writes what is buffered and a DATA frame of data, without
// copying data.
func (w *h2cWriter) writeData(id uint32, end bool, data []byte) error {
	var flags http2.Flags
	if end {
		flags = http2.FlagDataEndStream
	}
	n := len(data)
	w.buf = append(w.buf, byte(n>>16), byte(n>>8), byte(n), byte(http2.FrameData), byte(flags),
		byte(id>>24&0x7f), byte(id>>16), byte(id>>8), byte(id))
	w.vec = [2][]byte{w.buf, data}
	w.bufs = w.vec[:]
	_, err := w.bufs.WriteTo(w.nc)
	w.buf, w.vec = w.buf[:0], [2][]byte{}
	return err
}

// h2cSource is where consume takes a DATA frame's bytes from.
type h2cSource interface {
	read(p []byte) error // the next len(p) bytes into p
	skip(n int) error    // the next n bytes, dropped
}

// sliceSource is a frame the Framer read.
type sliceSource struct{ b []byte }

func (s *sliceSource) read(p []byte) error {
	s.b = s.b[copy(p, s.b):]
	return nil
}

func (s *sliceSource) skip(n int) error {
	s.b = s.b[n:]
	return nil
}

// connSource reads a frame's payload from the connection. Its first
// failure is kept in err: the connection's, not the server's frames.
type connSource struct {
	br      *bufio.Reader
	scratch []byte // where large skips land, made on first use
	got     int    // payload bytes read
	err     error
}

func (c *connSource) read(p []byte) error {
	k, err := io.ReadFull(c.br, p)
	if c.got += k; err != nil {
		return c.fail(err)
	}
	return nil
}

func (c *connSource) skip(n int) error {
	for n > 0 {
		// Buffered bytes, and small skips, go through the reader's buffer;
		// a large read into an empty bufio.Reader goes straight from the
		// socket into its argument, in as few system calls as it can.
		if b := c.br.Buffered(); b > 0 || n < h2cWritevMin {
			if b > 0 {
				b = min(n, b)
			} else {
				b = n
			}
			k, err := c.br.Discard(b)
			c.got += k
			if n -= k; err != nil {
				return c.fail(err)
			}
			continue
		}
		if c.scratch == nil {
			c.scratch = make([]byte, 256<<10)
		}
		k, err := c.br.Read(c.scratch[:min(n, len(c.scratch))])
		c.got += k
		if n -= k; err != nil {
			return c.fail(err)
		}
	}
	return nil
}

// fail keeps err, as the Framer reports it: the end of the connection
// inside a payload is unexpected once part of the payload came.
func (c *connSource) fail(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
		if c.got > 0 {
			err = io.ErrUnexpectedEOF
		}
	}
	c.err = err
	return err
}

// next reads one frame and applies it: f is the frame the Framer read (nil
// for DATA the client read itself). readErr reports that err is a read
// failure (the connection's or the Framer's), not the client's verdict on
// a frame.
func (cn *h2cConn) next() (f http2.Frame, readErr bool, err error) {
	if cn.direct && !cn.inBlock {
		// The Framer refuses DATA inside a header block, DATA on stream 0,
		// frames over the size advertised and bad padding: those (and
		// every padded frame) are left to it.
		if h, perr := cn.br.Peek(9); perr == nil && http2.FrameType(h[3]) == http2.FrameData {
			length := uint32(h[0])<<16 | uint32(h[1])<<8 | uint32(h[2])
			flags := http2.Flags(h[4])
			id := binary.BigEndian.Uint32(h[5:]) & (1<<31 - 1)
			if id != 0 && !flags.Has(http2.FlagDataPadded) && length <= h2cMaxFrame {
				cn.br.Discard(9)
				cn.frames.Add(1)
				cn.src.err, cn.src.got = nil, 0
				err := cn.onData(id, length, flags.Has(http2.FlagDataEndStream), &cn.src, int(length))
				if cn.src.err != nil {
					return nil, true, cn.src.err
				}
				return nil, false, err
			}
		}
	}
	f, err = cn.fr.ReadFrame()
	if err != nil {
		return nil, true, err
	}
	cn.frames.Add(1)
	return f, false, cn.handle(f)
}
