package rawtcp

import "github.com/oipkit/oipkit/internal/envswitch"

// EnvSwitch names the environment variable that turns the raw layer off for
// the whole process: OIPKIT_RAWTCP=off (or 0, false) makes Wrap and
// Listener return their argument unchanged, so that plain net.Conn system
// calls can be measured against raw ones (make bench-compare's A/B row) and
// ruled out when a connection misbehaves.
const EnvSwitch = "OIPKIT_RAWTCP"

// enabled is read once: the layer is on or off for the process's life.
var enabled = envswitch.On(EnvSwitch)

// Enabled reports whether Wrap makes connections raw in this process.
func Enabled() bool { return enabled }
