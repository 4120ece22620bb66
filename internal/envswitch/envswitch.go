// Package envswitch reads the environment variables that turn oipkit's
// hand-written fast layers off (OIPKIT_RAWTCP, OIPKIT_LEAN_GRPC,
// OIPKIT_H2C_DIRECT, OIPKIT_EVENT_LOOP, OIPKIT_LEAN_READS, OIPKIT_GRPC_VIEWS,
// OIPKIT_REST_VIEWS), so that each can be measured against the standard one
// and ruled out, with one spelling of "off" for all of them.
package envswitch

import "os"

// On reports whether the layer named by the environment variable name is
// on: it is unless the variable says off, 0, false or no.
func On(name string) bool {
	switch os.Getenv(name) {
	case "off", "0", "false", "no":
		return false
	}
	return true
}
