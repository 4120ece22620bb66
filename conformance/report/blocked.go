package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// BlockedKind identifies a blocked-implementation file: an implementation
// the compatibility matrix lists without a conformance run, because it
// cannot run where the matrix is made.
const BlockedKind = "BlockedImplementation"

// Blocked is an implementation that was not run: why, and the commands a
// user who can run it (with Docker or Kubernetes) grades it with. It is
// written by hand, as blocked.json beside where its report would be.
type Blocked struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Implementation Implementation `json:"implementation"`
	// Reason says why it cannot run here, in a sentence or two.
	Reason string `json:"reason"`
	// Commands are the oipkit commands that grade it where it runs.
	Commands []string `json:"commands"`
}

// IsBlocked reports whether a JSON document is a blocked-implementation
// file rather than a conformance report.
func IsBlocked(data []byte) bool {
	var head struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(data, &head) == nil && head.Kind == BlockedKind
}

// ReadBlockedFile reads and checks a blocked-implementation file.
func ReadBlockedFile(path string) (*Blocked, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read blocked implementation: %w", err)
	}
	var b Blocked
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: decode blocked implementation: %w", path, err)
	}
	switch {
	case b.APIVersion != APIVersion && b.APIVersion != apiVersionV1Alpha1:
		return nil, fmt.Errorf("%s: apiVersion %q, want %q", path, b.APIVersion, APIVersion)
	case b.Kind != BlockedKind:
		return nil, fmt.Errorf("%s: kind %q, want %q", path, b.Kind, BlockedKind)
	case strings.TrimSpace(b.Implementation.Name) == "":
		return nil, fmt.Errorf("%s: implementation name is empty", path)
	case strings.TrimSpace(b.Reason) == "":
		return nil, fmt.Errorf("%s: reason is empty", path)
	case len(b.Commands) == 0:
		return nil, fmt.Errorf("%s: no commands", path)
	}
	return &b, nil
}

// BlockedRow is one blocked implementation in the compatibility document,
// with a link to its own notes (optional).
type BlockedRow struct {
	Blocked *Blocked
	Links   []DocLink
}

// WriteBlocked writes the "Not run here" section of the compatibility
// document: one row per blocked implementation, with why and the commands
// that grade it where it runs. It writes nothing for no rows.
func WriteBlocked(w io.Writer, rows []BlockedRow) error {
	if len(rows) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\n## Not run here\n\n")
	b.WriteString("Implementations of the protocol that cannot run on the machine that made this matrix. " +
		"Each row says why, and gives the commands that grade it where it runs; their reports then join the matrix.\n\n")
	b.WriteString("| implementation | why it is not in the matrix | grade it where it runs | details |\n|---|---|---|---|\n")
	for _, r := range rows {
		cmds := make([]string, len(r.Blocked.Commands))
		for i, c := range r.Blocked.Commands {
			cmds[i] = "`" + strings.ReplaceAll(c, "|", `\|`) + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdEscape(implName(&ConformanceReport{Implementation: r.Blocked.Implementation})),
			mdEscape(r.Blocked.Reason), strings.Join(cmds, "<br>"), orNone(markdownLinks(r.Links)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
