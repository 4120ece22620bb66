package report

import (
	"fmt"
	"strings"
)

// A request over MaxReproducerBody is usually a limit probe: JSON nested
// 100,000 deep, a 65 MiB tensor of zeros. Such a body is a few runs of a
// short repeated unit between short literals, and a shell pipeline that
// writes those runs sends it exactly in a few lines, where quoting it
// would swamp the report and clipping it would not reproduce the defect.

const (
	// maxUnit is the longest repeated unit looked for.
	maxUnit = 16
	// minRun is the fewest bytes a repetition must cover to be written as
	// one (shorter ones stay in the literal around them).
	minRun = 256
	// maxGenerator bounds the generating command; past it the body is
	// not regular enough and the reproducer clips it instead.
	maxGenerator = 8 << 10
)

// bodySegment is a literal run of a body, or unit repeated n times.
type bodySegment struct {
	lit  []byte
	unit []byte
	n    int
}

// generatorCommand is a shell command that writes body exactly from its
// repeated runs, or "" when body has no such short description.
func generatorCommand(body []byte) string {
	segs := bodySegments(body)
	if segs == nil {
		return ""
	}
	var parts []string
	size := 0
	for _, s := range segs {
		var c string
		if s.unit == nil {
			c = printfCommand(s.lit)
		} else {
			c = repeatCommand(s.unit, s.n)
		}
		size += len(c)
		if size > maxGenerator {
			return ""
		}
		parts = append(parts, c)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "{ " + strings.Join(parts, "; ") + "; }"
}

// bodySegments splits body greedily into literals and repetitions of a
// unit of up to maxUnit bytes covering at least minRun bytes; nil when
// the literals alone would be too long to write out.
func bodySegments(body []byte) []bodySegment {
	var segs []bodySegment
	litStart, litLen := 0, 0
	for i := 0; i < len(body); {
		u, n := longestRepeat(body[i:])
		if u == 0 {
			i++
			litLen++
			if litLen > maxGenerator {
				return nil
			}
			continue
		}
		if i > litStart {
			segs = append(segs, bodySegment{lit: body[litStart:i]})
		}
		segs = append(segs, bodySegment{unit: body[i : i+u], n: n})
		i += u * n
		litStart, litLen = i, 0
	}
	if litStart < len(body) {
		segs = append(segs, bodySegment{lit: body[litStart:]})
	}
	return segs
}

// longestRepeat finds the unit length u (at most maxUnit) whose
// repetition from the start of b covers the most bytes, at least minRun,
// and how many whole units it covers; 0, 0 when none does. A unit must be
// one a shell pipeline writes safely (see repeatCommand).
func longestRepeat(b []byte) (unit, n int) {
	best := 0
	for u := 1; u <= maxUnit && 2*u <= len(b); u++ {
		if u > 1 && !repeatableUnit(b[:u]) {
			continue
		}
		j := u
		for j < len(b) && b[j] == b[j-u] {
			j++
		}
		if whole := j / u * u; whole >= minRun && whole > best {
			best, unit, n = whole, u, j/u
		}
		if best > len(b)-u {
			break // no longer unit can cover more
		}
	}
	return unit, n
}

// repeatableUnit reports whether `yes` can repeat a unit of several
// bytes: printable ASCII, so that the line `yes` writes is the unit
// itself and tr only takes away the newlines it adds.
func repeatableUnit(u []byte) bool {
	for _, c := range u {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// repeatCommand writes unit n times: one byte from /dev/zero through tr,
// a longer unit with yes (its newlines removed).
func repeatCommand(unit []byte, n int) string {
	if len(unit) == 1 {
		if unit[0] == 0 {
			return fmt.Sprintf("head -c %d /dev/zero", n)
		}
		return fmt.Sprintf(`head -c %d /dev/zero | tr '\0' '\%03o'`, n, unit[0])
	}
	return fmt.Sprintf("yes -- %s | tr -d '\\n' | head -c %d", shellQuote(string(unit)), n*len(unit))
}
