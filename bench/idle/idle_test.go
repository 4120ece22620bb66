package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// open holds every connection it was asked for, each answered its one
// request, and reports a refusal as an error.
func TestOpenHoldsAnsweredConnections(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, _ := io.ReadAll(r.Body); r.Method == http.MethodPost && string(b) == "{}" {
			posts.Add(1)
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	req := "POST /x HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 2\r\n\r\n{}"
	conns, err := open(addr, req, 20, 4)
	for _, c := range conns {
		defer c.Close()
	}
	if err != nil || len(conns) != 20 || posts.Load() != 20 {
		t.Fatalf("%d connections, %d posts, err %v; want 20, 20, nil", len(conns), posts.Load(), err)
	}
	if _, err := open(addr, "GET /x HTTP/1.1\r\nHost: "+addr+"\r\n\r\n", 1, 1); err == nil || !strings.Contains(err.Error(), "418") {
		t.Errorf("a 418 answer gave error %v", err)
	}
}
