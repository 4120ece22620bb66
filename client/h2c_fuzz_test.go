package client

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
)

// Limits of the fuzzed client: small, so that inputs reach them.
const (
	fuzzMaxMessage = 64
	fuzzMaxHead    = 1024
)

// h2cRun is what the lean client made of a server's bytes.
type h2cRun struct {
	s      *h2cStream
	blocks []headerBlock // every complete header block, whatever its stream
	err    error         // what ended the connection
	framer bool          // the Framer's error or the end of the bytes, not the client's own
}

// runH2C reads data as the frames a server sent on a connection with one
// call open (stream 1), as readLoop does, and returns the call's state and
// the header blocks read. direct: with the client's own DATA reads
// (h2c_direct.go), else every frame through x/net's Framer.
func runH2C(data []byte, direct bool) h2cRun {
	nc := &answerConn{r: bytes.NewReader(nil)} // writes go nowhere
	cn := &h2cConn{
		nc: nc, h: &h2cClient{max: fuzzMaxMessage, maxHead: fuzzMaxHead}, bw: newH2CWriter(nc),
		streams: map[uint32]*h2cStream{}, nextID: 3, active: 1,
		maxActive: 1 << 30, maxFrame: h2cMaxFrame, initWin: 65535, sendWin: 65535, recvAvail: h2cConnWindow,
		direct: direct, br: bufio.NewReaderSize(bytes.NewReader(data), 16),
	}
	cn.src.br = cn.br
	cn.fr = http2.NewFramer(cn.bw, cn.br)
	cn.fr.SetMaxReadFrameSize(h2cMaxFrame)
	cn.fr.SetReuseFrames()
	cn.dec = hpack.NewDecoder(4096, cn.onField)
	cn.dec.SetMaxStringLength(fuzzMaxHead)
	s := &h2cStream{done: make(chan struct{}, 1)}
	s.reset(true, fuzzMaxMessage)
	s.id, s.sendWin, s.recvAvail, s.deadline = 1, cn.initWin, int64(h2cStreamWindow), time.Now().Add(time.Hour)
	cn.streams[1] = s
	var run h2cRun
	for {
		f, readErr, err := cn.next()
		if err != nil {
			run.err, run.framer = err, readErr
			break
		}
		if h, ok := f.(interface{ HeadersEnded() bool }); ok && h.HeadersEnded() {
			run.blocks = append(run.blocks, cn.hb)
		}
	}
	cn.fail(run.err)
	run.s = s
	return run
}

// h2cOutcome sums up a run for comparison: the call's state, the blocks
// read and what ended the connection.
func h2cOutcome(r h2cRun) string {
	m := r.s.h2cMsg
	errText := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	return fmt.Sprintf("call: ended %v code %v %q err %s msgs %d len %d got %d prefix %d msg %q\nblocks %d, connection: %s (read %v)",
		r.s.ended, m.code, m.message, errText(m.err), m.msgs, m.msgLen, m.got, m.prefixN, m.msg,
		len(r.blocks), errText(r.err), r.framer)
}

// metaBlock is a header block as x/net's Framer reads it (ReadMetaHeaders,
// as grpc-go's transport does).
type metaBlock struct {
	id          uint32
	end         bool
	invalid     bool // a field x/net refuses (the lean client does not look)
	over        bool // the decoded list exceeds fuzzMaxHead (RFC 9113 §6.5.2 sizes)
	fields      map[string]string
	hasStatus   bool
	grpcMessage string
}

// stream1Event is one thing the server said about stream 1.
type stream1Event struct {
	block *metaBlock // HEADERS
	data  []byte     // DATA
	end   bool       // DATA with END_STREAM
	gone  bool       // RST_STREAM, GOAWAY that excludes it, or a connection error
}

// readMeta reads data with x/net's Framer and hpack, applying the
// connection-level rules of RFC 9113 that break a connection (invalid
// settings, a send window over 2^31-1, PUSH_PROMISE with push disabled).
func readMeta(data []byte) (blocks []metaBlock, events []stream1Event, clean bool) {
	fr := http2.NewFramer(io.Discard, bytes.NewReader(data))
	fr.SetMaxReadFrameSize(h2cMaxFrame)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil) // the list limit is x/net's default: sizes are checked below
	sendWin := int64(65535)
	for {
		f, err := fr.ReadFrame()
		var se http2.StreamError
		// A field x/net refuses is a stream error (with its cause); the
		// Framer's other stream errors (a zero WINDOW_UPDATE on a stream,
		// HEADERS padding past the frame) end the lean client's
		// connection, and so the reading here.
		if errors.As(err, &se) && se.Cause != nil {
			blocks = append(blocks, metaBlock{id: se.StreamID, invalid: true})
			if se.StreamID == 1 {
				events = append(events, stream1Event{block: &blocks[len(blocks)-1]})
			}
			continue
		}
		if err != nil {
			return blocks, append(events, stream1Event{gone: true}), errors.Is(err, io.EOF)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			b := metaBlock{id: f.StreamID, end: f.StreamEnded(), fields: map[string]string{}}
			size := 0
			for _, hf := range f.Fields {
				size += int(hf.Size())
				b.fields[hf.Name] = hf.Value // the last one counts
				if hf.Name == "grpc-status" {
					b.hasStatus = true
				}
			}
			b.over = size > fuzzMaxHead || f.Truncated
			blocks = append(blocks, b)
			if f.StreamID == 1 {
				events = append(events, stream1Event{block: &blocks[len(blocks)-1]})
			}
		case *http2.DataFrame:
			if f.StreamID == 1 {
				events = append(events, stream1Event{data: bytes.Clone(f.Data()), end: f.StreamEnded()})
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == 1 {
				events = append(events, stream1Event{gone: true})
			}
		case *http2.GoAwayFrame:
			if f.LastStreamID < 1 {
				events = append(events, stream1Event{gone: true})
			}
		case *http2.SettingsFrame:
			if f.ForeachSetting(func(s http2.Setting) error { return s.Valid() }) != nil {
				return blocks, append(events, stream1Event{gone: true}), false
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				if sendWin += int64(f.Increment); sendWin > 1<<31-1 {
					return blocks, append(events, stream1Event{gone: true}), false
				}
			}
		case *http2.PushPromiseFrame:
			return blocks, append(events, stream1Event{gone: true}), false
		}
	}
}

// grpcContentType is grpc-go's test of a gRPC content-type.
func grpcContentType(ct string) bool {
	return ct == "application/grpc" || strings.HasPrefix(ct, "application/grpc+") || strings.HasPrefix(ct, "application/grpc;")
}

// unaryAnswer reads stream 1's events by the gRPC over HTTP/2 protocol
// (PROTOCOL-HTTP2.md) for a unary call: response headers (:status 200, a
// gRPC content-type), DATA holding one uncompressed length-prefixed message
// of at most fuzzMaxMessage bytes, then trailers ending the stream with
// grpc-status, read as grpc-go reads it. done is false when the stream did
// not come to such trailers; then ok is false. skip is true when a header
// block of the stream holds a field x/net refuses (the lean client does not
// validate fields, grpc-go fails the call).
func unaryAnswer(events []stream1Event) (msg []byte, code codes.Code, message string, done, ok, skip bool) {
	headers, framed := false, true
	var data []byte
	for _, e := range events {
		switch {
		case e.gone:
			return nil, 0, "", false, false, false
		case e.block != nil:
			b := e.block
			if b.invalid {
				return nil, 0, "", false, false, true
			}
			if b.over {
				return nil, 0, "", false, false, false
			}
			if !headers {
				if b.end || b.fields[":status"] != "200" || !grpcContentType(b.fields["content-type"]) {
					return nil, 0, "", false, false, false
				}
				headers = true
				continue
			}
			if !b.end || !b.hasStatus {
				return nil, 0, "", false, false, false
			}
			n, err := strconv.ParseInt(b.fields["grpc-status"], 10, 32) // as grpc-go's http2Client
			if err != nil {
				return nil, codes.Unknown, "", true, false, false
			}
			framed = framed && len(data) >= 5 && data[0] == 0 &&
				int(binary.BigEndian.Uint32(data[1:5])) == len(data)-5 && len(data)-5 <= fuzzMaxMessage
			code = codes.Code(uint32(n))
			if code == codes.OK && framed {
				return data[5:], code, "", true, true, false
			}
			if code == codes.OK {
				// grpc-go fails the call (Internal, "cardinality
				// violation" for no message) in words of its own.
				return nil, 0, "", false, false, false
			}
			return nil, code, percentDecode(b.fields["grpc-message"]), framed || len(data) == 0, false, false
		default: // DATA
			if !headers || e.end {
				return nil, 0, "", false, false, false
			}
			data = append(data, e.data...)
		}
	}
	return nil, 0, "", false, false, false
}

// FuzzH2CAnswer reads arbitrary bytes as what a server sent on a lean
// HTTP/2 connection with one call open, and compares (1) every header block
// the client assembled (HEADERS and CONTINUATION, one hpack decoder for the
// connection) with x/net's MetaHeadersFrame reading of the same bytes, and
// (2) the call's outcome with the gRPC protocol's reading (unaryAnswer):
// the call succeeds, with the same message, exactly when the protocol says
// it does, and a status in valid trailers is the one grpc-go reads. It must
// never panic or hang, and never allocate for a message over its limit.
func FuzzH2CAnswer(f *testing.F) {
	frames := func(write func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer)) []byte {
		var b, hb bytes.Buffer
		write(http2.NewFramer(&b, nil), hpack.NewEncoder(&hb), &hb)
		return b.Bytes()
	}
	headers := func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer, id uint32, end bool, kv ...string) {
		hb.Reset()
		for i := 0; i < len(kv); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: end})
	}
	ok := func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 14})
		headers(fr, enc, hb, 1, false, ":status", "200", "content-type", "application/grpc")
		fr.WriteData(1, false, []byte{0, 0, 0, 0, 2, 'o', 'k'})
		headers(fr, enc, hb, 1, true, "grpc-status", "0", "grpc-message", "")
	}
	f.Add(frames(ok))
	f.Add(frames(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		fr.WritePing(false, [8]byte{1})
		fr.WriteWindowUpdate(0, 100)
		headers(fr, enc, hb, 3, true, ":status", "200", "grpc-status", "0") // another stream
		headers(fr, enc, hb, 1, false, ":status", "200", "content-type", "application/grpc+proto")
		fr.WriteDataPadded(1, false, []byte{0, 0, 0}, []byte{0, 0})
		fr.WriteData(1, false, []byte{0, 3, 'a', 'b', 'c'})
		hb.Reset()
		enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: "0"})
		enc.WriteField(hpack.HeaderField{Name: "x-trailer", Value: strings.Repeat("v", 40)})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes()[:4], EndStream: true})
		fr.WriteContinuation(1, true, hb.Bytes()[4:])
	}))
	f.Add(frames(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		headers(fr, enc, hb, 1, true, ":status", "200", "content-type", "application/grpc",
			"grpc-status", "5", "grpc-message", "model%20%22x%22 not found%")
	}))
	f.Add(frames(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		headers(fr, enc, hb, 1, false, ":status", "503", "content-type", "text/html")
		fr.WriteData(1, true, []byte("<html>"))
	}))
	f.Add(frames(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		headers(fr, enc, hb, 1, false, ":status", "200", "content-type", "application/grpc")
		fr.WriteData(1, false, []byte{0, 0xff, 0xff, 0xff, 0xff, 1}) // a 4 GiB message announced
		fr.WriteRSTStream(1, http2.ErrCodeCancel)
		fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	}))
	f.Add(frames(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		headers(fr, enc, hb, 1, false, ":status", "200", "content-type", "application/grpc")
		fr.WriteData(1, false, []byte{0, 0, 0, 0, 1, 'x', 0, 0})
		headers(fr, enc, hb, 1, true, "grpc-status", "0")
	}))
	f.Add(frames(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		headers(fr, enc, hb, 1, false, ":status", "200", "content-type", "application/grpc")
		fr.WriteData(1, false, []byte{0, 0, 0, 0, 0})
		headers(fr, enc, hb, 1, true, "grpc-status", "+0") // OK to grpc-go
	}))

	f.Fuzz(func(t *testing.T, data []byte) {
		run := runH2C(data, true)

		// (0) The client's own DATA reads against x/net's Framer's.
		ref := runH2C(data, false)
		if g, w := h2cOutcome(run), h2cOutcome(ref); g != w {
			t.Fatalf("%x: with the client's own DATA reads:\n%s\nthrough the Framer:\n%s", data, g, w)
		}
		blocks, events, clean := readMeta(data)

		// (1) Header blocks, as far as both read.
		for i := range min(len(run.blocks), len(blocks)) {
			got, want := run.blocks[i], blocks[i]
			if got.id != want.id {
				t.Fatalf("%x: block %d on stream %d, x/net reads stream %d", data, i, got.id, want.id)
			}
			if want.invalid {
				continue
			}
			if over := got.size > got.limit; over != want.over {
				t.Fatalf("%x: block %d: list of %d bytes over the limit %v, x/net %v", data, i, got.size, over, want.over)
			}
			if want.over {
				continue
			}
			if got.endStream != want.end || got.status != want.fields[":status"] || got.ctype != want.fields["content-type"] ||
				got.grpcStatus != want.fields["grpc-status"] || got.hasStatus != want.hasStatus ||
				got.grpcMessage != want.fields["grpc-message"] {
				t.Fatalf("%x: block %d: client read %+v, x/net %+v", data, i, got, want)
			}
		}
		if run.framer && errors.Is(run.err, io.EOF) && clean && len(run.blocks) != len(blocks) {
			t.Fatalf("%x: client read %d header blocks, x/net %d", data, len(run.blocks), len(blocks))
		}

		// (2) The call's outcome.
		s := run.s
		if !s.ended {
			t.Fatalf("%x: the call did not end with the connection", data)
		}
		if cap(s.msg) > fuzzMaxMessage {
			t.Fatalf("%x: %d bytes held for a message, limit %d", data, cap(s.msg), fuzzMaxMessage)
		}
		msg, err := s.result("Infer")
		want, code, message, done, wantOK, skip := unaryAnswer(events)
		if skip {
			return
		}
		if err == nil && (!wantOK || !bytes.Equal(msg, want)) {
			t.Fatalf("%x: the call succeeded with %q; the protocol reads ok %v, message %q", data, msg, wantOK, want)
		}
		if wantOK && checkKeptAnswer("Infer", want, fuzzMaxMessage) != nil {
			// A message that would decode past the bound is the client's
			// own refusal, as grpc-go's codec refuses it.
			if !errors.Is(err, ErrResponseTooLarge) {
				t.Fatalf("%x: a message decoding past %d bytes ended with %v, not ErrResponseTooLarge", data, fuzzMaxMessage, err)
			}
			return
		}
		if err != nil && wantOK {
			// The client stops at its own bounds first (a header block
			// over its limit on the wire, a string over it).
			if !run.framer && strings.Contains(run.err.Error(), "exceeds") || strings.Contains(run.err.Error(), "string too long") {
				return
			}
			t.Fatalf("%x: the call failed (%v); the protocol reads success with %q", data, err, want)
		}
		var ce *Error
		if done && !wantOK && errors.As(err, &ce) && code != codes.Unknown {
			if ce.GRPCCode != code || ce.Message != message {
				t.Fatalf("%x: the call ended with %v %q, grpc-go reads %v %q", data, ce.GRPCCode, ce.Message, code, message)
			}
		}
	})
}

// percentDecode undoes grpc-message's percent-encoding as PROTOCOL-HTTP2.md
// states it: "%" and two hex digits is a byte; anything else, a malformed
// escape included, is itself.
func percentDecode(m string) string {
	isHex := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
	var b []byte
	for i := 0; i < len(m); i++ {
		if m[i] == '%' && i+2 < len(m) && isHex(m[i+1]) && isHex(m[i+2]) {
			v, _ := strconv.ParseUint(m[i+1:i+3], 16, 8)
			b = append(b, byte(v))
			i += 2
			continue
		}
		b = append(b, m[i])
	}
	return string(b)
}

// FuzzDecodeGRPCMessage compares decodeGRPCMessage with the protocol's
// percent-decoding.
func FuzzDecodeGRPCMessage(f *testing.F) {
	for _, s := range []string{"", "plain", "a%20b", "100%", "%2", "%zz%41", "%%41", "caf%C3%A9", "%e2%98%83"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, m string) {
		if got, want := decodeGRPCMessage(m), percentDecode(m); got != want {
			t.Fatalf("decodeGRPCMessage(%q) = %q, want %q", m, got, want)
		}
	})
}

// FuzzGRPCTimeout checks appendGRPCTimeout for every duration: a valid
// hpack field grpc-timeout whose value is, by PROTOCOL-HTTP2.md, at most 8
// ASCII digits and a unit, at least the duration (rounded up, never down)
// and in the finest unit that can say it.
func FuzzGRPCTimeout(f *testing.F) {
	for _, d := range []time.Duration{0, -1, 1, 1500 * time.Microsecond, 10 * time.Second, 1<<63 - 1, -1 << 63} {
		f.Add(int64(d))
	}
	units := map[byte]time.Duration{'n': time.Nanosecond, 'u': time.Microsecond, 'm': time.Millisecond, 'S': time.Second, 'M': time.Minute, 'H': time.Hour}
	order := "numSMH"
	f.Fuzz(func(t *testing.T, n int64) {
		d := time.Duration(n)
		fs, err := hpack.NewDecoder(4096, nil).DecodeFull(appendGRPCTimeout(nil, d))
		if err != nil || len(fs) != 1 || fs[0].Name != "grpc-timeout" {
			t.Fatalf("%v: %v, %v", d, fs, err)
		}
		v := fs[0].Value
		if len(v) < 2 || len(v) > 9 {
			t.Fatalf("%v: grpc-timeout %q", d, v)
		}
		unit, ok := units[v[len(v)-1]]
		digits := v[:len(v)-1]
		k, err := strconv.ParseUint(digits, 10, 64)
		if !ok || err != nil || strings.TrimLeft(digits, "0123456789") != "" || k == 0 {
			t.Fatalf("%v: grpc-timeout %q is not 1 to 8 digits and a unit", d, v)
		}
		want := max(d, 1)
		// k units say at least d, and k-1 units less than d (in 128 bits'
		// stead: k-1 < d/unit rounded up).
		if up := uint64(want/unit) + b2u(want%unit != 0); k != up {
			t.Fatalf("%v: grpc-timeout %q, want %d%c", d, v, up, v[len(v)-1])
		}
		if i := strings.IndexByte(order, v[len(v)-1]); i > 0 {
			finer := units[order[i-1]]
			if uint64(want/finer)+b2u(want%finer != 0) <= 99999999 {
				t.Fatalf("%v: grpc-timeout %q when %c can say it", d, v, order[i-1])
			}
		}
	})
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
