package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

func replay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	window := fs.Duration("window", 0, "bounded out-of-orderness: how long particles wait for late ones")
	var late syncbuffer.LatePolicy
	fs.TextVar(&late, "late", syncbuffer.LateDrop, "late particles: drop, side or pass")
	var prec particle.Precision
	fs.TextVar(&prec, "precision", particle.Nanosecond, "timestamp precision of the input and output: ns, us, ms or s")
	out := fs.String("out", "-", "append output to this file; - is stdout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sensorstorm replay [flags] FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	w, err := openOutput(*out, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return exitError
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dead := &deadLetterLog{logger: logger}
	t, err := topology.New(topology.Config{Logger: logger, DeadLetters: dead, Clock: topology.ClockConfig{Replay: true}})
	if err != nil {
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return exitError
	}
	t.AddSource("file", topology.Single(&file.Source{Paths: fs.Args(), Precision: prec}), topology.SourceConfig{})
	sink := file.NewSink(w, prec)
	t.AddBolt("out", operation.Stateless(sink), topology.BoltConfig{
		Buffer: syncbuffer.Config{Window: *window, Late: late, FutureBound: -1},
	}).Input("file", topology.Global())
	start := time.Now()
	runErr := t.Run(ctx)
	src, dst := t.Stats("file"), t.Stats("out")
	fmt.Fprintf(stderr, "summary: read=%d emitted=%d late=%d invalid=%d elapsed=%s\n",
		src.Out.Load()+src.Invalid.Load(), dst.Processed.Load()-lateProcessed(late, dst), dst.Late.Load(), src.Invalid.Load()+dst.Invalid.Load(),
		time.Since(start).Round(time.Millisecond))
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		fmt.Fprintln(stderr, "sensorstorm:", runErr)
		return exitError
	}
	return exitOK
}

// lateProcessed is how many of the processed particles were late ones
// passed through, which the summary counts as late, not emitted.
func lateProcessed(p syncbuffer.LatePolicy, s *topology.ComponentStats) uint64 {
	if p == syncbuffer.LatePass {
		return s.Late.Load()
	}
	return 0
}

// openOutput opens path for appending, creating it if missing; "-" is
// stdout, which is not closed.
func openOutput(path string, stdout io.Writer) (io.Writer, error) {
	if path == "-" || path == "" {
		return nopCloser{stdout}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

type nopCloser struct{ io.Writer }

// deadLetterLog logs dead letters: the command's dead-letter sink.
type deadLetterLog struct{ logger *slog.Logger }

func (d *deadLetterLog) DeadLetter(ctx context.Context, l topology.DeadLetter) {
	d.logger.WarnContext(ctx, "dead letter", "component", l.Component, "reason", l.Reason, "err", l.Err)
}
