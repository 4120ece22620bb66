// Package rawtcp makes the reads and writes of a TCP connection raw system
// calls, for the hot paths of the load generator's clients and the
// reference server's HTTP/1.1 fast path.
//
// Go's sockets are non-blocking, so a read or write never blocks; yet
// net.Conn makes each one a blocking-capable system call, which tells the
// scheduler the goroutine may block: its P is handed to another thread when
// the call takes longer than the runtime's monitor tick (a write on
// loopback delivers the segment to the peer inside the call, which often
// does), and a steady stream of such calls keeps the monitor thread waking
// every 20 µs. At tens of thousands of requests per second on two cores
// that is a tenth or more of the process's CPU, which a load generator takes
// from the server it measures. A raw call skips both; when the socket would
// block, the call waits in the netpoller through syscall.RawConn exactly as
// net.Conn does, deadlines included.
//
// Wrap returns the connection unchanged on other systems and for anything
// but a *net.TCPConn.
package rawtcp
