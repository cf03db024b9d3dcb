// Command mqtt embeds an MQTT pipeline in a Go program: it subscribes to
// sensor topics, computes each sensor's mean over event-time windows and
// publishes the results back to the broker on results/{sensor}, printing
// them too.
//
//	go run ./examples/mqtt --broker tcp://127.0.0.1:1883
//	mosquitto_sub -t 'results/#' -v
//	mosquitto_pub -q 1 -t sensors/kitchen -m 'room temperature=21.5'
//
// Readings are line protocol on sensors/{sensor}: the topic's last segment
// becomes the sensor tag, and a reading without a timestamp gets the time
// it arrived. A window's results come once a reading past its end (plus a
// second for stragglers) arrived, or when the program is stopped
// (Ctrl-C). Messages are acknowledged to the broker once they are durable
// in the spool under --state-dir, so that a crash loses nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
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

// options are the command's flags.
type options struct {
	broker, topic, topicTags, results string
	clientID, stateDir                string
	window                            time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mqtt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.broker, "broker", "tcp://127.0.0.1:1883", "broker URL")
	fs.StringVar(&o.topic, "topic", "sensors/#", "topic filter of the sensor feeds")
	fs.StringVar(&o.topicTags, "topic-tags", "sensors/{sensor}", "template turning topic segments into tags")
	fs.StringVar(&o.results, "results", "results/{sensor}", "topic template of the results")
	fs.DurationVar(&o.window, "window", 10*time.Second, "length of the windows of the mean")
	fs.StringVar(&o.clientID, "client-id", "sensorstorm-example-mqtt", "MQTT client id: keep it across restarts")
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(os.TempDir(), "sensorstorm-example-mqtt"), "directory of the spool")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: mqtt [--broker URL] [--topic FILTER] [--window D] [--results TEMPLATE]")
		return 2
	}
	// Every later line on stderr goes through the logger, which the MQTT
	// connections share.
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	topo, src, err := build(o, stdout, logger)
	if err != nil {
		logger.Error("build", "err", err)
		return 1
	}
	err = topo.Run(ctx)
	logger.Info("stopped", "received", src.Stats().Received.Load(), "published", topo.Stats("sink").Processed.Load())
	if err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("run", "err", err)
		return 1
	}
	return 0
}

// build returns the topology: the MQTT source, the mean per sensor, and
// two sinks, one publishing to MQTT ("sink") and one printing. The topology's Run
// closes the source once it drained: its connection outlives the source's
// Run so that the trees completing meanwhile are acknowledged.
func build(o options, stdout io.Writer, logger *slog.Logger) (*topology.Topology, *mqtt.Source, error) {
	conn := mqtt.ConnConfig{Brokers: []string{o.broker}, ClientID: o.clientID, Logger: logger}
	src, err := mqtt.NewSource(mqtt.Config{ConnConfig: conn, Topics: []string{o.topic}, StateDir: o.stateDir, Payload: mqtt.PayloadConfig{TopicTags: o.topicTags}})
	if err != nil {
		return nil, nil, err
	}
	conn.ClientID += "-results" // a session of its own
	sink, err := mqtt.NewSink(mqtt.SinkConfig{ConnConfig: conn, Topic: o.results})
	if err != nil {
		return nil, nil, err
	}
	// The source acknowledges a message to the broker from the spool,
	// and completes it there once its tree completed: acking is on.
	topo, err := stream.From(src).
		OutOfOrder(time.Second).
		KeyBy("sensor").
		Window(stream.Tumbling(o.window), stream.Mean()).
		To(sink).
		WriteLines(stdout, particle.Millisecond).
		Build(topology.Config{Logger: logger, Acking: topology.AckingConfig{Enabled: true}})
	if err != nil {
		return nil, nil, err
	}
	return topo, src, nil
}
