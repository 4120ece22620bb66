// Command idle holds keep-alive connections open against an HTTP/1.1
// server, so that scripts/bench-memory.sh can read the server's RSS with
// that many idle clients: it opens -n connections (a few dials at a time,
// so the listen backlog does not overflow), sends one request on each (a
// GET of -path, or with -post a POST of that file's JSON to -path) and reads
// the answer, prints one JSON line when all are idle, holds them for -hold
// and closes them. Loopback only; it stops by itself.
//
//	idle -addr 127.0.0.1:18770 -path /v2/models/add_sub/infer -post body.json -n 10000 -hold 5s
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18770", "server host:port (loopback)")
	path := flag.String("path", "/v2/health/ready", "path of the one request sent on each connection")
	post := flag.String("post", "", "JSON file to POST to -path instead of a GET")
	n := flag.Int("n", 10000, "connections")
	dialers := flag.Int("dialers", 32, "connections opened at once")
	hold := flag.Duration("hold", 5*time.Second, "how long the connections stay idle")
	flag.Parse()
	if *n < 1 || *dialers < 1 {
		fmt.Fprintln(os.Stderr, "idle: -n and -dialers must be positive")
		os.Exit(2)
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprintln(os.Stderr, "idle: -addr must be a loopback host:port")
		os.Exit(2)
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", *path, *addr)
	if *post != "" {
		body, err := os.ReadFile(*post)
		if err != nil {
			fmt.Fprintln(os.Stderr, "idle:", err)
			os.Exit(2)
		}
		req = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", *path, *addr, len(body), body)
	}
	conns, err := open(*addr, req, *n, *dialers)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "idle: after %d connections: %v\n", len(conns), err)
		os.Exit(1)
	}
	fmt.Printf("{\"idle\":%d}\n", len(conns))
	time.Sleep(*hold)
}

// open dials n connections, each answered req once, dialers at a time.
func open(addr, req string, n, dialers int) ([]net.Conn, error) {
	var mu sync.Mutex
	var conns []net.Conn
	var errs []error
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	var wg sync.WaitGroup
	for range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				c, err := once(addr, req)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					conns = append(conns, c)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return conns, errors.Join(errs...)
}

// once dials, sends req and reads one whole answer, leaving the connection
// open and idle.
func once(addr, req string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	// A buffered reader sized for the small answer; what it reads past the
	// answer would be a protocol error, and a ready answer has none.
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4096), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("answered %s", resp.Status)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
