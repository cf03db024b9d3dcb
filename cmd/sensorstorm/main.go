// Command sensorstorm runs sensor stream pipelines: it replays recordings
// and ingests live feeds, releasing particles in event-time order.
//
// Usage:
//
//	sensorstorm replay [flags] FILE...
//
// Run "sensorstorm help" for the subcommands and their flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
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
	exitError = 1
	exitUsage = 2
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "replay":
		return replay(ctx, args[1:], stdout, stderr)
	case "ingest":
		return ingest(ctx, args[1:], stdout, stderr)
	case "bench":
		return bench(ctx, args[1:], stdout, stderr)
	case "run":
		return runPipeline(ctx, args[1:], stdout, stderr)
	case "validate":
		return validatePipeline(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "sensorstorm: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `sensorstorm runs time-synchronized sensor stream pipelines.

Commands:
  replay [flags] FILE...   replay recordings in event-time order at an adjusted speed
  ingest [flags]           ingest MQTT sensor feeds with no loss
  bench [flags]            measure MQTT ingest against a bare subscriber
  run PIPELINE.yaml        run a pipeline from a config file
  validate PIPELINE.yaml   check a pipeline config without running it

Run "sensorstorm COMMAND -h" for the flags of a command.
`)
}
