// Command replay replays recordings at an adjusted speed with the Go API:
// the particles come out paced at speed times the recording's own pace, in
// event-time order, with a one-minute count of readings per node.
//
//	go run ./examples/replay -speed 1000 testdata/library1-r1.lp
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
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
	var speed replay.Speed = 1000
	fs.TextVar(&speed, "speed", speed, "replay speed: a factor such as 10 or 0.5, or max")
	window := fs.Duration("every", time.Minute, "count readings per node over windows of this length")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: replay [-speed N] [-every D] FILE...")
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
	topo, err := topology.New(topology.Config{Replay: true})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	topo.AddSource("recording", topology.Single(src), topology.SourceConfig{})
	count := func() operation.Operation {
		op, _ := operation.NewStats(operation.StatsConfig{Size: *window, By: []string{"node"}, Fields: []string{"temperature"}, Aggregates: []string{"count"}})
		return op
	}
	topo.AddBolt("count", count, topology.BoltConfig{Buffer: syncbuffer.Config{Window: time.Second}}).Input("recording", topology.Fields("node"))
	topo.AddBolt("out", operation.Stateless(file.NewSink(stdout, particle.Millisecond)), topology.BoltConfig{}).Input("count", topology.Global())
	start := time.Now()
	if err := topo.Run(ctx); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "replayed %d particles at %v in %v\n", topo.Stats("recording").Out.Load(), speed, time.Since(start).Round(time.Millisecond))
	return 0
}
