// Command sensorstorm runs sensor stream pipelines: it replays recordings
// and ingests live feeds, releasing particles in event-time order.
//
// Usage:
//
//	sensorstorm COMMAND [flags] [arguments]
//
// Run "sensorstorm help" for the commands, "sensorstorm help COMMAND" for
// the flags of one.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed, or its input was all invalid
	exitUsage = 2 // the command line is wrong
)

// command is a subcommand.
type command struct {
	name, synopsis string
	run            func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands returns the commands in the order help lists them; stdin is
// what replay reads for the file "-".
func commands(stdin io.Reader) []command {
	return []command{
		{"replay", "replay [flags] FILE...     replay recordings in event-time order at an adjusted speed",
			func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
				return replay(ctx, args, stdin, stdout, stderr)
			}},
		{"ingest", "ingest [flags]             ingest MQTT sensor feeds with no loss", ingest},
		{"bench", "bench [flags]              measure MQTT ingest against a bare subscriber", bench},
		{"run", "run [flags] PIPELINE.yaml  run a pipeline from a config file", runPipeline},
		{"validate", "validate [flags] PIPELINE.yaml  check a pipeline config without running it", validatePipeline},
		{"cluster", "cluster status --cluster URL  show the workers, sources and units of a cluster", clusterCommand},
		{"version", "version                    print the version and the VCS revision", version},
		{"help", "help [COMMAND]             print this, or the usage of a command", help},
	}
}

// run runs the command line args with the process's standard input.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIO(ctx, args, os.Stdin, stdout, stderr)
}

// runIO runs the command line args and returns the exit code.
func runIO(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "-version", "--version":
		return version(ctx, nil, stdout, stderr)
	}
	for _, c := range commands(stdin) {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sensorstorm: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, "sensorstorm runs time-synchronized sensor stream pipelines.\n\nCommands:\n")
	for _, c := range commands(nil) {
		fmt.Fprintf(w, "  %s\n", c.synopsis)
	}
	fmt.Fprint(w, `
Every command takes --help (usage), --log-level debug|info|warn|error
(default info) and --log-format text|json (JSON to the last line). Flags
may come before or after the arguments. --out replaces its file unless
--append. Run "sensorstorm help COMMAND" for the flags of a command.

A first run, in a checkout: sensorstorm run pipelines/demo.yaml
`)
}

// help prints the usage, or with a command name that command's usage.
func help(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || slices.Contains([]string{"help", "-h", "-help", "--help"}, args[0]) {
		usage(stdout)
		return exitOK
	}
	if len(args) > 1 {
		fmt.Fprintln(stderr, "usage: sensorstorm help [COMMAND]")
		return exitUsage
	}
	for _, c := range commands(nil) {
		if c.name == args[0] {
			return c.run(ctx, []string{"-h"}, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sensorstorm help: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}
