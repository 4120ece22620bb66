package httpfield

import (
	"testing"

	"golang.org/x/net/http/httpguts"
)

// The rules agree with the ones net/http applies (x/net's httpguts).
func TestAgreesWithHTTPGuts(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if got, want := TokenByte(b), httpguts.IsTokenRune(rune(c)) && c < 0x80; got != want {
			t.Errorf("TokenByte(%#x) = %v, want %v", c, got, want)
		}
		v := []byte{'a', b, 'z'}
		if got, want := Valid([]byte("X"), v), httpguts.ValidHeaderFieldValue(string(v)); got != want {
			t.Errorf("value byte %#x: Valid = %v, httpguts %v", c, got, want)
		}
	}
	if Valid(nil, []byte("v")) {
		t.Error("an empty name is valid")
	}
}
