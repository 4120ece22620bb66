package report

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxReproducerBody bounds the request body a reproducer carries: past it
// the command would swamp the report, so the reproducer says it is not the
// request the suite sent.
const MaxReproducerBody = 64 << 10

// Reproduce builds the copy-paste shell command that sends a finding's
// request again, from its evidence as the report keeps it: curl for REST,
// grpcurl with the committed proto for gRPC. A request body the evidence
// kept cut short (or as a clipped hex dump) cannot be sent exactly: the
// command then starts with a comment saying so. It returns "" when there
// is no request to send.
func Reproduce(ev *Evidence, t Targets) string {
	if ev == nil || ev.Request.Target == "" {
		return ""
	}
	body, exact := evidenceBody(ev.Request)
	return reproduce(ev.Request, t, body, exact)
}

// ReproduceExact is [Reproduce] with the request body exactly as it was
// sent (the suite has it when it records a finding; the report keeps only
// a few KiB of it). For gRPC, body is the request message as protojson,
// one message a line for a stream.
func ReproduceExact(ev *Evidence, t Targets, body []byte) string {
	if ev == nil || ev.Request.Target == "" {
		return ""
	}
	return reproduce(ev.Request, t, body, true)
}

// ReproducerFor is the finding's reproducer: the one the run stored, or,
// for a report written before reproducers existed, one built from its
// evidence.
func (f Finding) ReproducerFor(t Targets) string {
	if f.Reproducer != "" {
		return f.Reproducer
	}
	return Reproduce(f.Evidence, t)
}

func reproduce(req Message, t Targets, body []byte, exact bool) string {
	var notes []string
	if !exact {
		notes = append(notes, fmt.Sprintf("NOT EXACT: the report keeps only part of the %s request body; this sends what it keeps", sizeWord(req.BodyBytes)))
	}
	// A long body sent exactly is written by a generating pipeline when
	// it has a short one (generate.go), else clipped.
	source := ""
	if len(body) > MaxReproducerBody {
		if exact && req.Method != "RPC stream" {
			source = generatorCommand(body)
		}
		if source == "" {
			notes = append(notes, fmt.Sprintf("NOT EXACT: the request body was %d bytes; this sends its first %d", len(body), MaxReproducerBody))
			body = body[:MaxReproducerBody]
		}
	}
	var cmd string
	switch {
	case strings.HasPrefix(req.Method, "RPC"):
		cmd = grpcurlCommand(req, t.GRPC, body, source, &notes)
	default:
		cmd = curlCommand(req, t.HTTP, body, source, &notes)
	}
	var b strings.Builder
	for _, n := range notes {
		b.WriteString("# " + n + "\n")
	}
	b.WriteString(cmd)
	return b.String()
}

func sizeWord(n int) string {
	if n <= 0 {
		return "original"
	}
	return strconv.Itoa(n) + "-byte"
}

// curlCommand sends the request with curl: the body, exact, from printf
// on stdin (a here-document would add a newline), or from source, a
// command that writes it, when there is one.
func curlCommand(req Message, base string, body []byte, source string, notes *[]string) string {
	if base == "" {
		base = "http://HOST:PORT"
	}
	url := strings.TrimRight(base, "/") + req.Target
	var args []string
	args = append(args, "curl", "-sS", "-i")
	if strings.ContainsAny(url, "[]{}") {
		args = append(args, "-g") // curl would read them as a URL pattern
	}
	if strings.Contains(req.Target, "/.") {
		args = append(args, "--path-as-is") // curl would squash dot segments
	}
	// A POST, PUT or PATCH without a body still declares Content-Length: 0.
	emptyData := len(body) == 0 && (req.Method == "POST" || req.Method == "PUT" || req.Method == "PATCH")
	switch {
	case req.Method == "HEAD":
		args = append(args, "--head")
	case req.Method == "GET" && len(body) == 0, req.Method == "POST" && (len(body) > 0 || emptyData):
	default:
		args = append(args, "-X", shellQuote(req.Method))
	}
	args = append(args, shellQuote(url))
	hasType := false
	for _, k := range sortedKeys(req.Header) {
		if strings.EqualFold(k, "Content-Length") && len(req.Header[k]) == 1 && req.Header[k][0] == strconv.Itoa(len(body)) {
			continue // curl sends it
		}
		hasType = hasType || strings.EqualFold(k, "Content-Type")
		for _, v := range req.Header[k] {
			if strings.ContainsAny(k+v, "\r\n") {
				*notes = append(*notes, fmt.Sprintf("NOT EXACT: header %s holds a line break, which curl cannot send", k))
				continue
			}
			if v == "" {
				args = append(args, "-H", shellQuote(k+";")) // curl's spelling of an empty value
			} else {
				args = append(args, "-H", shellQuote(k+": "+v))
			}
		}
	}
	if len(body) == 0 && !emptyData {
		return strings.Join(args, " ")
	}
	if !hasType {
		// curl would add application/x-www-form-urlencoded.
		args = append(args, "-H", shellQuote("Content-Type:"))
	}
	if emptyData {
		return strings.Join(append(args, "--data-binary", "''"), " ")
	}
	args = append(args, "--data-binary", "@-")
	if source == "" {
		source = printfCommand(body)
	}
	return source + " |\n  " + strings.Join(args, " ")
}

// grpcurlCommand sends the request message (messages, for a stream) with
// grpcurl and the committed proto, from the repository's root: the
// messages in a here-document, or from source when there is one.
func grpcurlCommand(req Message, addr string, body []byte, source string, notes *[]string) string {
	if addr == "" {
		addr = "HOST:PORT"
	}
	method := strings.TrimPrefix(req.Target, "/")
	var b strings.Builder
	if source != "" { // a unary call's one message
		fmt.Fprintf(&b, "%s |\n  grpcurl -plaintext -import-path specs/proto -proto inference.proto -d @ %s %s", source, shellQuote(addr), shellQuote(method))
		return b.String()
	}
	fmt.Fprintf(&b, "grpcurl -plaintext -import-path specs/proto -proto inference.proto -d @ %s %s", shellQuote(addr), shellQuote(method))
	text := string(body)
	if req.Method == "RPC stream" {
		if t, ok := strings.CutSuffix(text, "\n(half-closed)"); ok {
			text = t
		} else {
			*notes = append(*notes, "the suite left the stream open; grpcurl closes its side after the last message")
		}
	}
	if text == "" {
		text = "{}"
	}
	delim := "EOF"
	for strings.Contains(text, delim) {
		delim += "_"
	}
	fmt.Fprintf(&b, " <<'%s'\n%s\n%s", delim, text, delim)
	return b.String()
}

// printfCommand is a printf that writes body exactly: text as one quoted
// argument, anything else as escapes in the format.
func printfCommand(body []byte) string {
	if utf8.Valid(body) && printable(body) {
		return "printf '%s' " + shellQuote(string(body))
	}
	var b strings.Builder
	b.WriteString("printf '")
	for _, c := range body {
		switch {
		case c == '\'':
			b.WriteString(`'\''`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '%':
			b.WriteString("%%")
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\%03o`, c)
		}
	}
	b.WriteString("'")
	return b.String()
}

func printable(b []byte) bool {
	for _, c := range string(b) {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// The forms the suite renders a body in for the evidence
// (conformance/engine's renderBody): bytes that are not text as
// "[N bytes, not text] hex", a binary-extension body as its JSON header,
// a line "[binary tail, N bytes] hex"; a hex dump cut short ends in "…".
var (
	notTextForm    = regexp.MustCompile(`^\[(\d+) bytes, not text\] ([0-9a-f]*)$`)
	binaryTailForm = regexp.MustCompile(`(?s)^(.*)\n\[binary tail, (\d+) bytes\] ([0-9a-f]*)$`)
)

// evidenceBody recovers the request body from its evidence, and whether
// it is exactly what was sent: the lengths must add up to BodyBytes.
func evidenceBody(m Message) ([]byte, bool) {
	if strings.HasPrefix(m.Method, "RPC") {
		// protojson, one message a line; cut short, a line is not JSON.
		for _, line := range strings.Split(m.Body, "\n") {
			if line != "(half-closed)" && !json.Valid([]byte(line)) {
				return []byte(m.Body), false
			}
		}
		return []byte(m.Body), true
	}
	if m.Body == "" {
		return nil, m.BodyBytes == 0
	}
	if sm := notTextForm.FindStringSubmatch(m.Body); sm != nil {
		if b, err := hex.DecodeString(sm[2]); err == nil && strconv.Itoa(len(b)) == sm[1] && len(b) == m.BodyBytes {
			return b, true
		}
	}
	if sm := binaryTailForm.FindStringSubmatch(m.Body); sm != nil {
		head := []byte(sm[1])
		if h, ok := evidenceBody(Message{Body: sm[1], BodyBytes: m.BodyBytes - atoi(sm[2])}); ok {
			head = h
		}
		if tail, err := hex.DecodeString(sm[3]); err == nil && strconv.Itoa(len(tail)) == sm[2] && len(head)+len(tail) == m.BodyBytes {
			return append(head, tail...), true
		}
	}
	// A body the suite clipped to its 4 KiB ends in "…", and may then be
	// as long as the whole was.
	clipped := m.BodyBytes > 4<<10 && strings.HasSuffix(m.Body, "…")
	return []byte(m.Body), len(m.Body) == m.BodyBytes && !clipped
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
