package client

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// loopOutcome is what a request's answer came to: as http1Client.send
// returns it, and whether the connection may carry another request.
type loopOutcome struct {
	a        InferAnswer
	reusable bool
	err      error
}

// blockingOutcome reads data as the answer with the blocking path's
// http1Conn.answer, whose verdicts FuzzHTTP1Answer holds to net/http's.
func blockingOutcome(data []byte, keep bool, max int64, maxHeader int) loopOutcome {
	cn := &http1Conn{maxHeader: maxHeader}
	cn.br = bufio.NewReaderSize(bytes.NewReader(data), http1BufferSize)
	a, errBody, _, reusable, err := cn.answer(keep, max)
	if err == nil && a.Status > 299 {
		return loopOutcome{reusable: reusable, err: statusError("Infer", &RawResponse{Status: a.Status, Body: errBody})}
	}
	return loopOutcome{a: a, reusable: reusable, err: err}
}

// loopOutcomeOf feeds data to the loop's reader in reads of the sizes cuts
// gives (cycled; all at once when empty), then the end of the connection;
// an answer handed to the blocking path is read the way loop_linux.go's
// hand-off reads it: its bytes so far, then the rest of the connection.
func loopOutcomeOf(data, cuts []byte, keep bool, max int64, maxHeader int) loopOutcome {
	var s loopAnswer
	s.reset(keep, max, maxHeader)
	p := newHeadParser(maxHeader)
	rest := data
	for i := 0; ; i++ {
		var res feedResult
		var err error
		if len(rest) == 0 {
			res, err = s.eof(nil)
		} else {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, 1+int(cuts[i%len(cuts)]))
			}
			// The loop's reads land in a buffer it reuses: so does this one.
			chunk := append(make([]byte, 0, n), rest[:n]...)
			rest = rest[n:]
			res, err = s.feed(p, chunk)
			clear(chunk)
		}
		switch res {
		case feedMore:
			continue
		case feedFallback:
			cn := &http1Conn{maxHeader: maxHeader}
			src := bytes.NewReader(bytes.Clone(s.replay()))
			cn.br = bufio.NewReaderSize(io.MultiReader(src, bytes.NewReader(rest)), http1BufferSize)
			a, errBody, _, reusable, err := cn.answer(keep, max)
			if err == nil && reusable && src.Len() > 0 {
				err = malformed("%d bytes after the end of the %d-byte body", src.Len(), a.BodyLen)
			}
			if err == nil && a.Status > 299 {
				return loopOutcome{reusable: reusable, err: statusError("Infer", &RawResponse{Status: a.Status, Body: errBody})}
			}
			return loopOutcome{a: a, reusable: reusable, err: err}
		}
		if err != nil {
			return loopOutcome{err: err}
		}
		a, reusable, err := s.result()
		if err == nil && reusable && len(rest) > 0 {
			// Bytes the server sent beyond the answer: the next request's
			// answer would start with them and fail.
			err = malformed("%d bytes after the end of the %d-byte body", len(rest), a.BodyLen)
		}
		return loopOutcome{a: a, reusable: reusable, err: err}
	}
}

// FuzzLoopAnswer holds the event loop's reading of an answer to the
// blocking path's, whatever sizes the reads have: the same status, body,
// header length and reuse, or the same kind of error. The one difference
// allowed is bytes after the answer, which either may see first.
func FuzzLoopAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a=b\r\n{}\r\n0\r\nT: v\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 103 Early\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.0 200 OK\r\n\r\nuntil the end",
		"HTTP/1.1 500 Oops\r\nContent-Length: 16\r\n\r\n{\"error\":\"boom\"}",
		"HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 2\r\nContent-Length: 4\r\n\r\n{}ab",
		"HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 9\r\nContent-Length: 4\r\n\r\n{}ab",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\nextra",
		"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}trailing",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n{}",
		"\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",
		"garbage",
		"",
		"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", maxKeptLine) + "\r\nContent-Length: 2\r\n\r\n{}",
	} {
		f.Add([]byte(s), []byte{}, true)
		f.Add([]byte(s), []byte{0, 3, 17}, false)
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte, keep bool) {
		const max, maxHeader = 1 << 12, 1 << 11
		want := blockingOutcome(data, keep, max, maxHeader)
		got := loopOutcomeOf(data, cuts, keep, max, maxHeader)
		if int64(len(got.a.Body)) > max {
			t.Fatalf("kept %d bytes, limit %d", len(got.a.Body), max)
		}
		if trailing(want.err) && got.err == nil || trailing(got.err) && want.err == nil {
			return
		}
		if (want.err == nil) != (got.err == nil) {
			t.Fatalf("blocking path: %v; loop: %v", want.err, got.err)
		}
		if want.err != nil {
			if kind(want.err) != kind(got.err) {
				t.Fatalf("blocking path: %v (%s); loop: %v (%s)", want.err, kind(want.err), got.err, kind(got.err))
			}
			return
		}
		if got.a.Status != want.a.Status || got.a.HeaderLen != want.a.HeaderLen || got.a.BodyLen != want.a.BodyLen ||
			!bytes.Equal(got.a.Body, want.a.Body) || got.reusable != want.reusable {
			t.Fatalf("blocking path: %+v reusable %v; loop: %+v reusable %v", want.a, want.reusable, got.a, got.reusable)
		}
	})
}

func trailing(err error) bool {
	return err != nil && strings.Contains(err.Error(), "bytes after the end")
}

// kind is the class of an answer's error the load generator counts.
func kind(err error) string {
	var e *Error
	switch {
	case errors.As(err, &e) && e.HTTPStatus != 0:
		return "status " + string(rune('0'+e.HTTPStatus/100)) + " " + string(e.Body)
	case errors.Is(err, ErrResponseTooLarge):
		return "too large"
	case errors.Is(err, ErrMalformedResponse):
		return "malformed"
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	}
	return "other: " + err.Error()
}
