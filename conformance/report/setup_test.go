package report

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// bash runs script and returns its standard output and exit status.
func bash(t *testing.T, script string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	var out bytes.Buffer
	cmd := exec.Command("bash", "-c", script)
	cmd.Stdout = &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), 0
}

// TestWithSetup: the steps run quietly around the request, made in order
// and removed in reverse; what is printed and the exit status are the
// request's, a here-document request included.
func TestWithSetup(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	step := func(name string) SetupStep {
		return SetupStep{
			Make:   fmt.Sprintf("echo make %s >>%s; echo noise; echo noise >&2", name, log),
			Remove: fmt.Sprintf("echo remove %s >>%s; echo noise", name, log),
		}
	}
	request := "cat <<'EOF'\nthe answer\nEOF\n(exit 7)"
	script := WithSetup(request, []SetupStep{step("a"), {Make: "true"}, step("b")})
	out, rc := bash(t, script)
	if out != "the answer\n" || rc != 7 {
		t.Errorf("printed %q, exit %d; want the request's %q, exit 7\n%s", out, rc, "the answer\n", script)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "make a\nmake b\nremove b\nremove a\n"; string(got) != want {
		t.Errorf("steps ran as\n%s\nwant\n%s", got, want)
	}
	if WithSetup(request, nil) != request || WithSetup(request, []SetupStep{{}}) != request || WithSetup("", []SetupStep{step("a")}) != "" {
		t.Error("a reproducer without steps, or without a request, is not left as it is")
	}
	// A step that only puts something back, and one that only makes.
	os.Remove(log)
	for _, c := range []struct {
		step SetupStep
		want string
	}{
		{SetupStep{Remove: step("c").Remove}, "remove c\n"},
		{SetupStep{Make: step("d").Make}, "make d\n"},
	} {
		script := WithSetup(request, []SetupStep{c.step})
		if out, rc := bash(t, script); out != "the answer\n" || rc != 7 {
			t.Errorf("printed %q, exit %d; want the request's\n%s", out, rc, script)
		}
		got, _ := os.ReadFile(log)
		if string(got) != c.want {
			t.Errorf("steps ran as %q, want %q\n%s", got, c.want, script)
		}
		os.Remove(log)
	}
}

// writeBack runs WriteFileCommand(path, data) with bash, checks that the
// file then holds data, and returns the command.
func writeBack(t *testing.T, path string, data []byte) string {
	t.Helper()
	cmd := WriteFileCommand(path, data)
	if _, rc := bash(t, cmd); rc != 0 {
		t.Fatalf("exit %d:\n%s", rc, cmd)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("the file holds %d bytes, not the %d written (first difference at %d):\n%s", len(got), len(data), firstDiff(got, data), cmd)
	}
	return cmd
}

// TestWriteFileCommand writes an object with zero runs long and short,
// bytes the shell quotes specially and bytes that are not text over a
// longer file whose name needs quoting, reads it back and removes it.
func TestWriteFileCommand(t *testing.T) {
	data := make([]byte, 8192)
	copy(data[3:], "it's 100% \\ \"text\"")
	copy(data[100:1100], bytes.Repeat([]byte{0xa5}, 1000)) // a fill
	for i := range 300 {
		data[4096+i] = byte(i*7 + 1)
	}
	data[4096+310] = 0xff // after a gap of 10 zero bytes: the same write
	copy(data[5000:], []byte{1, 2, 3, 4, 5})
	copy(data[5005:5100], bytes.Repeat([]byte{7}, 95)) // a fill right after a write
	data[8191] = 0x80                                  // after a long gap: a write of its own
	path := filepath.Join(t.TempDir(), "it's an object")
	if err := os.WriteFile(path, bytes.Repeat([]byte{9}, 10000), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := writeBack(t, path, data)
	if n, fills := bytes.Count([]byte(cmd), []byte("| dd ")), bytes.Count([]byte(cmd), []byte("| tr ")); n != 6 || fills != 2 {
		t.Errorf("%d writes, %d of them fills; want 6 and 2 (the text, a fill, the run with its short gap, five bytes and a fill, the last byte):\n%s", n, fills, cmd)
	}
	if _, rc := bash(t, RemoveFileCommand(path)); rc != 0 {
		t.Fatal("remove failed")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the object is still there: %v", err)
	}
}

// TestWriteFileCommandRandom writes objects made of random stretches of
// zeros, one repeated byte and random bytes, ending anywhere, and reads
// each back.
func TestWriteFileCommandRandom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "object")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 30 {
		var data []byte
		for len(data) < 1+rng.IntN(3000) {
			n := 1 + rng.IntN(80)
			switch rng.IntN(3) {
			case 0:
				data = append(data, make([]byte, n)...)
			case 1:
				data = append(data, bytes.Repeat([]byte{byte(rng.IntN(256))}, n)...)
			default:
				for range n {
					data = append(data, byte(rng.IntN(256)))
				}
			}
		}
		writeBack(t, path, data)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
