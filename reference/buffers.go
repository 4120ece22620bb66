package reference

import (
	"math/bits"
	"sync"
)

// Bodies above maxPooledBuffer (megabyte tensors) are kept in pools of
// power-of-two capacities up to maxLargeBuffer: without them every large
// request allocated (and the kernel zeroed) its body and response buffers
// anew, and grew them by copying, a third of the server's time on a 16 MiB
// identity request (BenchmarkIdentityBinaryHandler). sync.Pool lets the
// garbage collector take them back when traffic stops.
const (
	minLargeClass  = 21 // 2 MiB: the first class above maxPooledBuffer
	maxLargeClass  = 27 // 128 MiB
	maxLargeBuffer = 1 << maxLargeClass
)

var largeBuffers [maxLargeClass + 1]sync.Pool

// getBufferFor returns a pooled buffer for a body of about n bytes: one of
// capacity at least n when the pool has one, else an empty one (the caller
// grows it as bytes arrive, so a promise alone reserves nothing).
func getBufferFor(n int64) *[]byte {
	if n <= maxPooledBuffer || n > maxLargeBuffer {
		return getBuffer()
	}
	if b, ok := largeBuffers[max(bits.Len64(uint64(n-1)), minLargeClass)].Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// putBuffer returns b to its pool. A large buffer goes back only when its
// capacity is a power of two, the classes getBufferFor takes from: a
// buffer append grew (a response) would go to a class nothing takes from,
// and every request would add one more to it; under load that grew the
// server by gigabytes a minute, each collection keeping the pools' last
// contents alive and raising the next heap goal with them.
func putBuffer(b *[]byte) {
	switch c := cap(*b); {
	case c <= maxPooledBuffer:
		buffers.Put(b)
	case c <= maxLargeBuffer && c&(c-1) == 0:
		if k := bits.Len(uint(c)) - 1; k >= minLargeClass {
			largeBuffers[k].Put(b)
		}
	}
}

// growBuffer makes room for at least more bytes: up to want bytes in all
// when want is known (> 0), else twice the capacity, as append grows.
// Above maxPooledBuffer the capacity is a power of two, so that the buffer
// is found again in its class; it at most doubles, so a body's buffer stays
// within twice the bytes that actually arrived.
func growBuffer(b []byte, more, want int) []byte {
	// Room enough already: a pooled buffer must not double on every
	// request that fits it (each doubling left a larger buffer in a class
	// nothing takes from, and the server grew by gigabytes a minute).
	if len(b)+more <= cap(b) {
		return b
	}
	if want <= 0 {
		want = 2 * cap(b)
	}
	need := max(len(b)+more, min(want, 2*cap(b)))
	c := need
	if need > maxPooledBuffer {
		c = 1 << bits.Len(uint(need-1))
	}
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}
