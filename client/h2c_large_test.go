package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"

	"github.com/oipkit/oipkit/internal/rawtcp"
)

// TestH2CLargeMessages: megabyte messages both ways, concurrent calls on
// one connection, kept and dropped, with the client's own DATA reads and
// writev (h2c_direct.go) and without them.
func TestH2CLargeMessages(t *testing.T) {
	defer func(d bool) { h2cDirect = d }(h2cDirect)
	_, addr := startH2CServer(t, grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	raw := make([]byte, 3<<20+7)
	for i := range raw {
		raw[i] = byte(rand.Uint32())
	}
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			h2cDirect = direct // read when the connection is dialled
			c := newTestGRPC(t, addr, Options{Connections: 1})
			p, req := prepare(t, c, "echo", raw)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 8 {
				wg.Go(func() {
					b, err := p.Send(context.Background(), i%2 == 0)
					if err != nil {
						errs <- err
						return
					}
					if i%2 == 0 {
						checkEcho(t, b, req)
					} else if b != nil {
						errs <- fmt.Errorf("keep=false returned %d bytes", len(b))
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		})
	}
}

// TestH2CLargeFrames: the client advertises the largest frame size and
// large windows, and takes a message in one DATA frame of megabytes.
func TestH2CLargeFrames(t *testing.T) {
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	// Every connection's settings: the GRPC client's grpc-go connection
	// may dial this server too.
	settings := make(chan map[http2.SettingID]uint32, 8)
	errs := make(chan error, 1)
	addr := rawH2Server(t, func(n int, nc net.Conn, fr *http2.Framer) {
		fr.SetMaxReadFrameSize(1<<24 - 1)
		got := map[http2.SettingID]uint32{}
		f, err := fr.ReadFrame()
		if sf, ok := f.(*http2.SettingsFrame); err == nil && ok {
			sf.ForeachSetting(func(s http2.Setting) error { got[s.ID] = s.Val; return nil })
		}
		select {
		case settings <- got:
		default:
		}
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1<<24 - 1},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
		fr.WriteWindowUpdate(0, 1<<30)
		// The first request may go out before these settings arrive;
		// the second comes in large frames.
		for i := range 2 {
			if err := answerLarge(fr, msg, i == 1); err != nil {
				errs <- err
				return
			}
		}
	})
	c := newTestGRPC(t, addr, Options{Connections: 1, Timeout: 20 * time.Second})
	p, _ := prepare(t, c, "m", make([]byte, 2<<20))
	for range 2 {
		b, err := p.Send(context.Background(), true)
		if err != nil {
			select {
			case serr := <-errs:
				t.Fatalf("%v (the server: %v)", err, serr)
			default:
				t.Fatal(err)
			}
		}
		if !bytes.Equal(b, msg) {
			t.Fatalf("got %d bytes, want the %d sent", len(b), len(msg))
		}
	}
	for got := range settings {
		if got[http2.SettingMaxFrameSize] == h2cMaxFrame && got[http2.SettingInitialWindowSize] == uint32(h2cStreamWindow) {
			return
		}
		if len(settings) == 0 {
			t.Fatalf("client settings %v: want SETTINGS_MAX_FRAME_SIZE %d, SETTINGS_INITIAL_WINDOW_SIZE %d", got, h2cMaxFrame, h2cStreamWindow)
		}
	}
}

// answerLarge answers the next request with msg in one DATA frame; with
// wantLarge, only if the request came in DATA frames over 16 KiB.
func answerLarge(fr *http2.Framer, msg []byte, wantLarge bool) error {
	var id uint32
	large := false
	for id == 0 {
		f, err := fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.DataFrame:
			large = large || len(f.Data()) > 16<<10
			if f.StreamEnded() {
				id = f.StreamID
			}
		}
	}
	if wantLarge && !large {
		return fmt.Errorf("the request came in DATA frames of 16 KiB or less")
	}
	body := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	copy(body[5:], msg)
	return answerWith(fr, id, body)
}

// answerWith writes headers, body in one DATA frame and OK trailers.
func answerWith(fr *http2.Framer, id uint32, body []byte) error {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
	fr.WriteData(id, false, body)
	hb.Reset()
	enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: "0"})
	return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true})
}

// TestH2CDirectAllocs: reading a megabyte DATA frame that is dropped, and
// writing one with writev, allocate nothing.
func TestH2CDirectAllocs(t *testing.T) {
	const size = 1 << 20
	var frame bytes.Buffer
	http2.NewFramer(&frame, nil).WriteData(1, false, append([]byte{0, 0, 0x10, 0, 0}, make([]byte, size)...))
	r := bytes.NewReader(frame.Bytes())
	cn := &h2cConn{
		h: &h2cClient{max: 64 << 20}, streams: map[uint32]*h2cStream{}, direct: true,
		recvAvail: 1 << 62, br: bufio.NewReaderSize(r, 32<<10),
	}
	cn.src.br = cn.br
	cn.fr = http2.NewFramer(io.Discard, cn.br)
	s := &h2cStream{id: 1, done: make(chan struct{}, 1)}
	cn.streams[1] = s
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(frame.Bytes())
		s.recvAvail = 1 << 62
		s.h2cMsg = h2cMsg{max: 64 << 20, msgLen: -1, headers: true}
		if _, _, err := cn.next(); err != nil || s.got != size {
			t.Fatalf("next: %v, %d bytes taken", err, s.got)
		}
	})
	if allocs != 0 {
		t.Errorf("a dropped 1 MiB DATA frame read with %v allocations, want 0", allocs)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
	nc, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	w := newH2CWriter(rawtcp.Wrap(nc))
	data := make([]byte, size)
	allocs = testing.AllocsPerRun(20, func() {
		w.Write([]byte("pending frames"))
		if err := w.writeData(1, false, data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("writeData of 1 MiB: %v allocations, want 0", allocs)
	}
}
