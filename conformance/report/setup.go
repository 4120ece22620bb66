package report

import (
	"fmt"
	"strings"
)

// A SetupStep is state around a finding's request: Make makes what the
// request relies on and its spec made before sending it (a shared memory
// object, a region registered in it), so that pasted alone the reproducer
// still shows the defect; Remove removes it or puts back what the spec
// changed (a setting), so that the reproducer leaves the server as it
// found it. Both are shell commands, run quietly; either may be "".
type SetupStep struct {
	Make, Remove string
}

// WithSetup wraps cmd, a reproducer, in steps: their Make commands in
// order before it, their Remove commands in reverse order after it, every
// one with its output discarded, so that what the reproducer prints and
// the status it ends with are cmd's (interop/replay.py reads both). An
// empty Make or Remove is no command.
func WithSetup(cmd string, steps []SetupStep) string {
	var makes, removes []string
	for _, s := range steps {
		if s.Make != "" {
			makes = append(makes, quiet(s.Make))
		}
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Remove != "" {
			removes = append(removes, quiet(steps[i].Remove))
		}
	}
	if cmd == "" || len(makes)+len(removes) == 0 {
		return cmd
	}
	var b strings.Builder
	if len(makes) > 0 {
		b.WriteString("# setup (quiet): what the request relies on, made as the spec made it\n")
		b.WriteString(strings.Join(makes, "\n") + "\n")
	}
	b.WriteString("# the request\n" + cmd + "\n")
	if len(removes) > 0 {
		b.WriteString("rc=$?\n# clean-up (quiet): what the spec put back or removed after it\n")
		b.WriteString(strings.Join(removes, "\n") + "\n")
		// A subshell's exit sets $? without ending the shell it is pasted in.
		b.WriteString("(exit $rc)")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// quiet is cmd with its output, standard and error, discarded. A brace
// group holds any command, a here-document included.
func quiet(cmd string) string {
	return "{ " + cmd + "\n} >/dev/null 2>&1"
}

// SharedMemoryCommand creates the POSIX shared memory object key ("/name",
// as shm_open spells it; on Linux the file /dev/shm/name) holding data:
// the file is cut to len(data) zero bytes, then each run of one repeated
// byte is filled with tr and each other run of non-zero bytes written
// with printf, so that a mostly empty or filled object stays a short
// command. An object of that name that exists is overwritten.
func SharedMemoryCommand(key string, data []byte) string {
	path := shellQuote("/dev/shm/" + strings.TrimPrefix(key, "/"))
	var b strings.Builder
	b.WriteString("# run on the server's host: the server maps the object by its name\n")
	fmt.Fprintf(&b, "truncate -s 0 %s && truncate -s %d %s", path, len(data), path)
	for off := 0; off < len(data); {
		switch {
		case data[off] == 0:
			off++
			continue
		case sameRun(data, off) >= minFill:
			n := sameRun(data, off)
			fmt.Fprintf(&b, " &&\n  head -c %d /dev/zero | tr '\\000' '\\%03o'", n, data[off])
			fmt.Fprintf(&b, " | dd of=%s bs=1 seek=%d conv=notrunc status=none", path, off)
			off += n
		default:
			end := literalEnd(data, off)
			fmt.Fprintf(&b, " &&\n  %s | dd of=%s bs=1 seek=%d conv=notrunc status=none", printfCommand(data[off:end]), path, off)
			off = end
		}
	}
	return b.String()
}

// minFill is the shortest run of one byte filled rather than written out.
const minFill = 32

// sameRun is the length of the run of data[off]'s value from off.
func sameRun(data []byte, off int) int {
	n := 1
	for off+n < len(data) && data[off+n] == data[off] {
		n++
	}
	return n
}

// literalEnd is the end of the run of bytes from off worth one printf: it
// stops at 16 zero bytes in a row, since a shorter gap costs less written
// as "\000"s than as another command, and where a run to fill starts.
// off does not start one.
func literalEnd(data []byte, off int) int {
	end, zeros, same := off, 0, 0
	for i := off; i < len(data); i++ {
		if i > off && data[i] == data[i-1] {
			same++
		} else {
			same = 1
		}
		if data[i] == 0 {
			if zeros++; zeros == 16 {
				return end
			}
			continue
		}
		if same == minFill {
			return i - minFill + 1
		}
		end, zeros = i+1, 0
	}
	return end
}

// RemoveSharedMemoryCommand removes what [SharedMemoryCommand] made.
func RemoveSharedMemoryCommand(key string) string {
	return "rm -f " + shellQuote("/dev/shm/"+strings.TrimPrefix(key, "/"))
}
