// Package httpfield holds the syntax rules of HTTP/1.1 header fields that
// oipkit's own HTTP/1.1 readers share: the generator's lean client reading
// answers and the reference server's fast path reading requests. They are
// net/http's rules, so both accept exactly the fields net/http accepts.
package httpfield

// Valid reports whether name is a token and value has no control bytes but
// tab (RFC 9110 field-name and field-value, as net/http checks them).
func Valid(name, value []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if !TokenByte(c) {
			return false
		}
	}
	for _, c := range value {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// TokenByte reports whether c is an RFC 9110 tchar.
func TokenByte(c byte) bool { return c < 0x80 && isTchar[c] }

var isTchar = func() (t [128]bool) {
	for c := range t {
		t[c] = '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
