package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/oipkit/oipkit/verdict"
	"github.com/oipkit/oipkit/version"
)

// command is one subcommand.
type command struct {
	// Name is the subcommand word; Summary is a one-line description for
	// `oipkit help`.
	Name, Summary string
	// Run executes the command. ctx is cancelled on SIGINT or SIGTERM; args
	// are the arguments after the subcommand name. Returning flag.ErrHelp
	// exits 0; an error wrapping errUsage exits verdict.ExitUsage; an exitError
	// exits with its code; other errors exit verdict.ExitNotRun.
	Run func(ctx context.Context, args []string) error
}

// commands holds the registered subcommands by name.
var commands = map[string]command{}

// register adds a subcommand; call it from an init function.
func register(c command) {
	if _, dup := commands[c.Name]; dup {
		panic("oipkit: duplicate command " + c.Name)
	}
	commands[c.Name] = c
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// errUsage marks a command-line mistake (exit status verdict.ExitUsage).
var errUsage = errors.New("usage error")

func init() {
	register(command{Name: "version", Summary: "print the oipkit version", Run: runVersion})
	register(command{Name: "help", Summary: "show usage of oipkit or of one command", Run: runHelp})
}

func main() {
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext ends at SIGINT or SIGTERM: commands stop gracefully (serve
// answers the requests it took).
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// run dispatches args to a subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return verdict.ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "-version", "--version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "oipkit: unknown command %q\n\n", name)
		usage(stderr)
		return verdict.ExitUsage
	}
	err := c.Run(ctx, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case exitCodeOf(err) >= 0: // load and report print their own messages
		return exitCodeOf(err)
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "oipkit %s: %v\n", name, err)
		return verdict.ExitUsage
	}
	fmt.Fprintf(stderr, "oipkit %s: %v\n", name, err)
	return verdict.ExitNotRun
}

// newFlagSet returns a flag set for a subcommand that reports errors instead
// of exiting. synopsis is the text after "usage: oipkit ", and doc a short
// description printed above the flags.
func newFlagSet(name, synopsis, doc string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: oipkit %s\n\n%s\n\nflags:\n", synopsis, strings.TrimSpace(doc))
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs; a parse error becomes a usage error (the
// flag package has already printed it with the usage).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "oipkit %s: Open Inference Protocol conformance suite, load generator and reference server\n\n", version.Version)
	fmt.Fprintln(w, "usage: oipkit <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].Summary)
	}
	fmt.Fprintln(w, "\nRun 'oipkit help <command>' or 'oipkit <command> -h' for a command's flags.")
}

func runVersion(_ context.Context, args []string) error {
	fs := newFlagSet("version", "version", "Print the oipkit version and the conformance suite version.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Printf("oipkit %s (suite %s)\n", version.Version, version.SuiteVersion)
	return nil
}

func runHelp(ctx context.Context, args []string) error {
	if len(args) == 0 {
		usage(os.Stdout)
		return nil
	}
	c, ok := commands[args[0]]
	if !ok || args[0] == "help" {
		if !ok {
			return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
		}
		usage(os.Stdout)
		return nil
	}
	// Every command's flag set prints its usage for -h.
	return c.Run(ctx, []string{"-h"})
}
