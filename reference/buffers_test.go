package reference

import "testing"

// TestGrowBufferKeepsRoom: a buffer with room for what comes is returned
// as it is. A pooled 32 MiB body buffer used to double on every 16 MiB
// request, leaving ever larger buffers in classes nothing takes from: the
// server grew by gigabytes a minute under 16 MiB REST binary load.
func TestGrowBufferKeepsRoom(t *testing.T) {
	for _, c := range []struct{ len, cap, more, want int }{
		{0, 32 << 20, 1<<20 + 1, 0},
		{0, 32 << 20, 1<<20 + 1, 16<<20 + 1},
		{16 << 20, 32 << 20, 512, 16<<20 + 1},
		{0, 4096, 512, 0},
	} {
		b := make([]byte, c.len, c.cap)
		if got := growBuffer(b, c.more, c.want); cap(got) != c.cap {
			t.Errorf("growBuffer(len %d cap %d, more %d, want %d): cap %d, want it kept", c.len, c.cap, c.more, c.want, cap(got))
		}
	}
	// Without room it grows: to want when known, else by doubling, and
	// above maxPooledBuffer to a power of two (a class getBufferFor takes).
	if got := cap(growBuffer(make([]byte, 4<<20, 4<<20), 512, 0)); got != 8<<20 {
		t.Errorf("doubling a full 4 MiB buffer: cap %d, want %d", got, 8<<20)
	}
	if got := cap(growBuffer(make([]byte, 2<<20, 2<<20), 512, 3<<20)); got != 4<<20 {
		t.Errorf("growing a full 2 MiB buffer towards 3 MiB: cap %d, want %d", got, 4<<20)
	}
}

// TestPutBufferOnlyTakesItsClasses: a large buffer whose capacity is not
// a power of two (one append grew) is dropped, not pooled where no
// getBufferFor would find it.
func TestPutBufferOnlyTakesItsClasses(t *testing.T) {
	odd := make([]byte, 0, 3<<20)
	putBuffer(&odd)
	for k := minLargeClass; k <= maxLargeClass; k++ {
		if b, ok := largeBuffers[k].Get().(*[]byte); ok && cap(*b) == 3<<20 {
			t.Fatalf("a 3 MiB buffer went to class %d", k)
		}
	}
	pow := make([]byte, 0, 4<<20)
	putBuffer(&pow)
	if b := getBufferFor(4 << 20); cap(*b) != 4<<20 && cap(*b) != 0 {
		t.Errorf("getBufferFor(4 MiB) after putting one back: cap %d", cap(*b))
	}
}
