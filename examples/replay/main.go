// Command replay replays recordings with the Go API and prints what the
// engine made of them: readings delivered out of order come out in
// event-time order after a synchronization window, readings later than the
// window are counted and dropped, and each time window of the whole network
// gives one row of temperature statistics.
//
//	go run ./examples/replay testdata/library1-disordered.lp
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/stream"
	"github.com/sensorstorm/sensorstorm/topology"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	speed := replay.Max
	fs.TextVar(&speed, "speed", speed, "replay speed: a factor such as 10 or 0.5, or max")
	every := fs.Duration("every", 10*time.Minute, "length of the statistics windows")
	window := fs.Duration("window", 30*time.Second, "how long readings wait for later-arriving earlier ones")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: replay [-speed N] [-every D] [-window D] FILE...")
		return 2
	}
	cfg := replay.Config{Speed: speed}
	for _, p := range fs.Args() {
		cfg.Inputs = append(cfg.Inputs, replay.Input{Path: p})
	}
	src, err := replay.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// The out-of-order window is the bounded disorder the buffer absorbs; a
	// late reading is dropped rather than put in a window already computed.
	// The replay is the run's clock, so a paced run keeps its timers in step.
	topo, err := stream.From(src).
		OutOfOrder(*window).
		Window(stream.Tumbling(*every), stream.Count("temperature"), stream.Mean("temperature"), stream.Min("temperature"), stream.Max("temperature")).
		ForEach(func(p particle.Particle) {
			num := func(k string) float64 { v, _ := p.Field(k); f, _ := v.Number(); return f }
			fmt.Fprintf(stdout, "%-19s  %8.0f  %6.2f  %6.2f  %6.2f\n", p.EventTime().UTC().Format("2006-01-02 15:04:05"),
				num("temperature_count"), num("temperature_mean"), num("temperature_min"), num("temperature_max"))
		}).
		Build(topology.Config{})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "temperature of the whole network over %v windows, in event-time order\n", *every)
	fmt.Fprintf(stdout, "%-19s  %8s  %6s  %6s  %6s\n", "window end (UTC)", "readings", "mean", "min", "max")
	if err := topo.Run(ctx); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	read, late := topo.Stats("source").Out.Load(), topo.Stats("window").Late.Load()
	fmt.Fprintf(stdout, "%d readings: %d in windows, %d more than %v late, dropped\n", read, read-late, late, *window)
	return 0
}
