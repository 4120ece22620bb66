package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The canned gRPC server is a small HTTP/2 cleartext responder rather than
// grpc-go, whose server (16 KiB frames, several copies of a message) capped
// the generator-alone row at about half the TCP echo. It reads each request
// through x/net's framer (one copy, as the TCP echo makes) and answers every
// call with pre-built frames: HEADERS, the gRPC message in DATA frames of the
// client's largest frame size written with one writev per flow-control
// window, then trailers. It never decodes a request message.

// h2cMaxWindow is the largest flow-control window HTTP/2 allows: the
// server's receive windows, so that a client never waits on them.
const h2cMaxWindow = 1<<31 - 1

// h2cAnswers holds the pre-built parts of every answer.
type h2cAnswers struct {
	headers, trailers []byte // HPACK blocks, never-indexed literals only
	answer            func(method string) []byte
}

func newH2CAnswers(answer func(method string) []byte) *h2cAnswers {
	block := func(fields ...string) []byte {
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for i := 0; i < len(fields); i += 2 {
			// Never indexed: the same bytes stay valid for every response,
			// whatever the client's dynamic table holds.
			enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1], Sensitive: true})
		}
		return b.Bytes()
	}
	return &h2cAnswers{
		headers:  block(":status", "200", "content-type", "application/grpc"),
		trailers: block("grpc-status", "0"),
		answer: func(method string) []byte {
			msg := answer(method)
			out := make([]byte, 5+len(msg)) // gRPC framing: uncompressed, 4-byte length
			binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
			copy(out[5:], msg)
			return out
		},
	}
}

// serveH2C accepts connections until ln fails.
func serveH2C(ln net.Listener, a *h2cAnswers) error {
	// The answers are framed once per method, here, not per request.
	framed := map[string][]byte{}
	var mu sync.Mutex
	lookup := func(path string) []byte {
		method := path[strings.LastIndexByte(path, '/')+1:]
		mu.Lock()
		defer mu.Unlock()
		b, ok := framed[method]
		if !ok {
			b = a.answer(method)
			framed[method] = b
		}
		return b
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			(&h2cServerConn{c: c, a: a, lookup: lookup}).serve()
		}()
	}
}

// h2cServerConn is one client connection: a reader (this goroutine) and a
// writer that sends answers one stream at a time.
type h2cServerConn struct {
	c      net.Conn
	a      *h2cAnswers
	lookup func(path string) []byte
	wmu    sync.Mutex // serializes writes to c

	mu       sync.Mutex
	cond     *sync.Cond
	sendWin  int64            // the client's connection window
	initWin  int64            // the client's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame int              // the client's SETTINGS_MAX_FRAME_SIZE
	streams  map[uint32]int64 // open streams' send windows
	closed   bool

	done chan h2cDone // requests read in full, in order
}

type h2cDone struct {
	id  uint32
	msg []byte
}

func (sc *h2cServerConn) serve() {
	sc.cond = sync.NewCond(&sc.mu)
	sc.sendWin, sc.initWin, sc.maxFrame = 65535, 65535, 16384
	sc.streams = map[uint32]int64{}
	sc.done = make(chan h2cDone, 1024)
	br := bufio.NewReaderSize(sc.c, 1<<20)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(br, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(sc.c, br)
	fr.SetReuseFrames()
	fr.MaxHeaderListSize = 1 << 20
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.SetMaxReadFrameSize(1<<24 - 1)
	sc.wmu.Lock()
	err := fr.WriteSettings(
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2cMaxWindow},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1<<24 - 1},
		http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1000},
	)
	if err == nil {
		err = fr.WriteWindowUpdate(0, h2cMaxWindow-65535)
	}
	sc.wmu.Unlock()
	if err != nil {
		return
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		sc.writeLoop()
	}()
	defer func() {
		sc.mu.Lock()
		sc.closed = true
		sc.cond.Broadcast()
		sc.mu.Unlock()
		close(sc.done)
		<-writerDone
	}()
	paths := map[uint32][]byte{} // open streams' answers
	var unacked uint32           // request bytes received since the last connection WINDOW_UPDATE
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			sc.mu.Lock()
			f.ForeachSetting(func(s http2.Setting) error {
				switch s.ID {
				case http2.SettingInitialWindowSize:
					delta := int64(s.Val) - sc.initWin
					sc.initWin = int64(s.Val)
					for id := range sc.streams {
						sc.streams[id] += delta
					}
				case http2.SettingMaxFrameSize:
					sc.maxFrame = int(s.Val)
				}
				return nil
			})
			sc.cond.Broadcast()
			sc.mu.Unlock()
			if sc.write(func() error { return fr.WriteSettingsAck() }) != nil {
				return
			}
		case *http2.WindowUpdateFrame:
			sc.mu.Lock()
			if f.StreamID == 0 {
				sc.sendWin += int64(f.Increment)
			} else if w, ok := sc.streams[f.StreamID]; ok {
				sc.streams[f.StreamID] = w + int64(f.Increment)
			}
			sc.cond.Broadcast()
			sc.mu.Unlock()
		case *http2.PingFrame:
			if !f.IsAck() {
				data := f.Data
				if sc.write(func() error { return fr.WritePing(true, data) }) != nil {
					return
				}
			}
		case *http2.MetaHeadersFrame:
			path := f.PseudoValue("path")
			if path == "" {
				return
			}
			sc.mu.Lock()
			sc.streams[f.StreamID] = sc.initWin
			sc.mu.Unlock()
			paths[f.StreamID] = sc.lookup(path)
			if f.StreamEnded() {
				sc.done <- h2cDone{f.StreamID, paths[f.StreamID]}
				delete(paths, f.StreamID)
			}
		case *http2.DataFrame:
			// The stream windows are the largest there are; the
			// connection's is given back in large steps.
			if unacked += f.Length; unacked >= 1<<30 {
				n := unacked
				unacked = 0
				if sc.write(func() error { return fr.WriteWindowUpdate(0, n) }) != nil {
					return
				}
			}
			if msg, ok := paths[f.StreamID]; ok && f.StreamEnded() {
				sc.done <- h2cDone{f.StreamID, msg}
				delete(paths, f.StreamID)
			}
		case *http2.RSTStreamFrame:
			delete(paths, f.StreamID)
			sc.mu.Lock()
			delete(sc.streams, f.StreamID)
			sc.mu.Unlock()
		case *http2.GoAwayFrame:
			return
		}
	}
}

func (sc *h2cServerConn) write(fn func() error) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	return fn()
}

// writeLoop answers each request read in full: HEADERS, DATA as the
// client's windows allow (one writev per window), trailers.
func (sc *h2cServerConn) writeLoop() {
	var heads []byte  // frame headers of one writev, reused
	var bufs [][]byte // the writev's parts, reused
	for d := range sc.done {
		heads = appendFrameHeader(heads[:0], len(sc.a.headers), http2.FrameHeaders, http2.FlagHeadersEndHeaders, d.id)
		bufs = append(bufs[:0], heads, sc.a.headers)
		msg := d.msg
		for len(msg) > 0 {
			sc.mu.Lock()
			win, ok := sc.streams[d.id]
			for !sc.closed && ok && (sc.sendWin <= 0 || win <= 0) {
				sc.cond.Wait()
				win, ok = sc.streams[d.id]
			}
			if sc.closed {
				sc.mu.Unlock()
				return
			}
			if !ok { // reset by the client: nothing more on it
				sc.mu.Unlock()
				bufs = bufs[:0]
				break
			}
			n := int(min(int64(len(msg)), sc.sendWin, win))
			sc.sendWin -= int64(n)
			sc.streams[d.id] = win - int64(n)
			maxFrame := sc.maxFrame
			sc.mu.Unlock()
			start := len(heads)
			for off := 0; off < n; off += maxFrame {
				heads = appendFrameHeader(heads, min(maxFrame, n-off), http2.FrameData, 0, d.id)
			}
			// heads may have moved as it grew: take the parts after it.
			for i, off := start, 0; off < n; i, off = i+9, off+maxFrame {
				bufs = append(bufs, heads[i:i+9], msg[off:min(off+maxFrame, n)])
			}
			msg = msg[n:]
			if len(msg) > 0 {
				if sc.writev(&bufs) != nil {
					return
				}
				heads, bufs = heads[:0], bufs[:0]
			}
		}
		if len(bufs) > 0 && len(msg) == 0 {
			h := len(heads)
			heads = appendFrameHeader(heads, len(sc.a.trailers), http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, d.id)
			bufs = append(bufs, heads[h:], sc.a.trailers)
		}
		sc.mu.Lock()
		delete(sc.streams, d.id)
		sc.mu.Unlock()
		if len(bufs) > 0 && sc.writev(&bufs) != nil {
			return
		}
	}
}

// writev writes the parts in one call (Go splits it at the kernel's limit).
func (sc *h2cServerConn) writev(bufs *[][]byte) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	nb := net.Buffers(*bufs)
	_, err := nb.WriteTo(sc.c)
	if err != nil {
		return fmt.Errorf("canned gRPC: write: %w", err)
	}
	return nil
}

func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(id>>24&0x7f), byte(id>>16), byte(id>>8), byte(id))
}
