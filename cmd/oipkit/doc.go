// Command oipkit is the oipkit CLI: a reference Open Inference Protocol
// server, a conformance suite, a load generator and report tools.
//
//	oipkit serve [flags]     run the reference server
//	oipkit help [command]    show usage
//	oipkit version           print the version
//
// Each subcommand lives in its own file and registers itself from init:
//
//	func init() {
//		register(command{Name: "load", Summary: "generate load against a server", Run: runLoad})
//	}
//
//	func runLoad(ctx context.Context, args []string) error {
//		fs := newFlagSet("load", "load [flags] <target>", "Generate load ...")
//		rate := fs.Int("rate", 100, "requests per `second`")
//		if err := parseFlags(fs, args); err != nil {
//			return err
//		}
//		...
//	}
//
// ctx is cancelled on SIGINT or SIGTERM (main sets that up; commands must not
// install their own signal handlers). Return flag.ErrHelp for -h (exit 0), an
// error wrapping errUsage for command-line mistakes (exit 2), any other error
// for failures (exit 1).
package main
