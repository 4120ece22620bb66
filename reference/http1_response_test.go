package reference

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestHTTP1ResponseHeadOnce: a handler that declared its Content-Length and
// writes an empty chunk first gets one head, not one per write.
func TestHTTP1ResponseHeadOnce(t *testing.T) {
	server, client := net.Pipe()
	hc := newHTTP1Conn(&http1Server{}, server)
	w := &hc.w
	w.reset(false)
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(client); got <- string(b) }()
	w.Header()["Content-Length"] = []string{"5"}
	for _, p := range []string{"", "hello"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.finish(time.Now()); err != nil {
		t.Fatal(err)
	}
	server.Close()
	if out := <-got; strings.Count(out, "HTTP/1.1 200") != 1 || !strings.HasSuffix(out, "\r\n\r\nhello") {
		t.Errorf("wire: %q, want one head and the body", out)
	}
}
