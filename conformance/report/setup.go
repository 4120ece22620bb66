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

// WriteFileCommand writes data to the file at path (a shared memory
// object: on Linux, /dev/shm/name): the file is cut to len(data) zero
// bytes, then each run of one repeated byte is filled with tr and each
// other run of non-zero bytes written with printf, so that a mostly empty
// or filled object stays a short command. A file that exists is
// overwritten.
func WriteFileCommand(path string, data []byte) string {
	path = shellQuote(path)
	var b strings.Builder
	fmt.Fprintf(&b, "truncate -s 0 %s && truncate -s %d %s", path, len(data), path)
	for off := 0; off < len(data); {
		if data[off] == 0 {
			off++
			continue
		}
		end, write := runEnd(data, off), ""
		if end-off >= minFill {
			write = fmt.Sprintf("head -c %d /dev/zero | tr '\\000' '\\%03o'", end-off, data[off])
		} else {
			end = literalEnd(data, off)
			write = printfCommand(data[off:end])
		}
		fmt.Fprintf(&b, " &&\n  %s | dd of=%s bs=1 seek=%d conv=notrunc status=none", write, path, off)
		off = end
	}
	return b.String()
}

// minFill is the shortest run of one byte filled rather than written out.
const minFill = 32

// runEnd is the end of the run of data[off]'s value from off.
func runEnd(data []byte, off int) int {
	end := off + 1
	for end < len(data) && data[end] == data[off] {
		end++
	}
	return end
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

// RemoveFileCommand removes what [WriteFileCommand] wrote.
func RemoveFileCommand(path string) string {
	return "rm -f " + shellQuote(path)
}
