package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// benchTimeout bounds each measurement: a broker that drops messages must
// not make bench wait forever.
const benchTimeout = 2 * time.Minute

// bench measures, on the broker given, a bare paho subscriber (QoS 1,
// automatic acknowledgements, persistent session) and the ingest pipeline
// (spool mode, the window given, output discarded) receiving the same
// number of messages from a separate publisher, and prints both rates and
// their ratio. The publisher stays at most --ahead messages ahead of what
// the subscriber acknowledged, so that a stock Mosquitto (1000 queued
// messages per client) never drops any. It measures --runs times,
// alternating the two, and prints each run and the medians: a machine's
// other work makes single runs vary.
const benchUsage = `usage: sensorstorm bench --broker URL [flags]

Measures, on the broker given, a bare paho subscriber and the ingest
pipeline receiving the same messages, and prints both rates and their ratio.
`

func bench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("bench", benchUsage, stderr)
	fs := c.fs
	broker := fs.String("broker", "", "broker URL, e.g. tcp://localhost:1883 (required)")
	n := fs.Int("n", 20000, "messages per measurement")
	runs := fs.Int("runs", 3, "measurements of each, alternating bare and ingest")
	ahead := fs.Int("ahead", 500, "messages the publisher may be ahead of the subscriber's acknowledgements")
	var window time.Duration
	durationVar(fs, &window, "window", time.Second, "window of the ingest pipeline, a `DURATION` such as 1s")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the last ingest measurement to this file")
	rest, code, ok := c.parse(args, stdout)
	if !ok {
		return code
	}
	switch {
	case len(rest) > 0:
		return c.usageError("no arguments expected, got %q", rest)
	case *broker == "":
		return c.usageError("missing required flag --broker")
	case *n < 1 || *ahead < 1 || *runs < 1:
		return c.usageError("-n, --ahead and --runs must be at least 1")
	}
	logger, logs := c.log.logger(stderr)
	defer logs.Summarize(ctx)
	prefix := fmt.Sprintf("sensorstorm-bench-%d-%d", os.Getpid(), time.Now().UnixNano())
	var bareRates, ingestRates, ratios []float64
	for r := range *runs {
		topic := fmt.Sprintf("%s/%d", prefix, r)
		bare, err := benchBare(ctx, *broker, topic+"/bare", *n, *ahead)
		if err != nil {
			fmt.Fprintln(stderr, "sensorstorm: bench:", err)
			return exitError
		}
		profile := ""
		if r == *runs-1 {
			profile = *cpuProfile
		}
		ing, err := profiled(profile, func() (time.Duration, error) {
			return benchIngest(ctx, logger, *broker, topic+"/ingest", *n, *ahead, window)
		})
		if err != nil {
			fmt.Fprintln(stderr, "sensorstorm: bench:", err)
			return exitError
		}
		bareRate, ingestRate := float64(*n)/bare.Seconds(), float64(*n)/ing.Seconds()
		bareRates, ingestRates = append(bareRates, bareRate), append(ingestRates, ingestRate)
		ratios = append(ratios, ingestRate/bareRate)
		fmt.Fprintf(stdout, "run %d/%d: bare %.0f msgs/s (%v), ingest %.0f msgs/s (%v): ratio %.2f\n",
			r+1, *runs, bareRate, bare.Round(time.Millisecond), ingestRate, ing.Round(time.Millisecond), ingestRate/bareRate)
	}
	fmt.Fprintf(stdout, "bare paho subscriber:  %.0f msgs/s (median of %d runs of %d messages; QoS 1, persistent session)\n", median(bareRates), *runs, *n)
	fmt.Fprintf(stdout, "sensorstorm ingest:    %.0f msgs/s (median; spool mode, QoS 1, %v window)\n", median(ingestRates), window)
	fmt.Fprintf(stdout, "ratio: %.2f (median of %d; min %.2f, max %.2f)\n", median(ratios), *runs, slices.Min(ratios), slices.Max(ratios))
	return exitOK
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// profiled runs measure while profiling the CPU into path, unless path
// is empty.
func profiled(path string, measure func() (time.Duration, error)) (time.Duration, error) {
	if path == "" {
		return measure()
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return 0, fmt.Errorf("cpu profile: %w", err)
	}
	d, err := measure()
	pprof.StopCPUProfile()
	return d, errors.Join(err, f.Close())
}

// benchPublish publishes n readings stamped with the time of publishing,
// at most ahead messages ahead of acked(), and returns when it started.
func benchPublish(ctx context.Context, url, topic string, n, ahead int, acked func() int) (time.Time, error) {
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(topic + "-pub"))
	if err := waitToken(ctx, pub.Connect()); err != nil {
		return time.Time{}, fmt.Errorf("publisher: %w", err)
	}
	defer pub.Disconnect(100)
	start := time.Now()
	var last paho.Token
	for i := range n {
		for i-acked() > ahead {
			if ctx.Err() != nil {
				return start, ctx.Err()
			}
			time.Sleep(50 * time.Microsecond)
		}
		last = pub.Publish(topic, 1, false, fmt.Sprintf("reading,sensor=s%d v=%d %d", i%8, i, time.Now().UnixNano()))
	}
	return start, waitToken(ctx, last)
}

func waitToken(ctx context.Context, tok paho.Token) error {
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(benchTimeout):
		return errors.New("no answer from the broker")
	}
}

// waitCount waits until count() reaches n.
func waitCount(ctx context.Context, count func() int, n int) error {
	deadline := time.Now().Add(benchTimeout)
	for count() < n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("received %d of %d messages: did the broker drop some?", count(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// forgetSession removes a persistent session from the broker.
func forgetSession(url, id string) {
	c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(true))
	if tok := c.Connect(); tok.WaitTimeout(5*time.Second) && tok.Error() == nil {
		c.Disconnect(100)
	}
}

func benchBare(ctx context.Context, url, topic string, n, ahead int) (time.Duration, error) {
	var got atomic.Int64
	end := make(chan time.Time, 1)
	id := topic + "-sub"
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(false)
	o.SetDefaultPublishHandler(func(paho.Client, paho.Message) {
		if got.Add(1) == int64(n) {
			end <- time.Now()
		}
	})
	sub := paho.NewClient(o)
	if err := waitToken(ctx, sub.Connect()); err != nil {
		return 0, fmt.Errorf("subscriber: %w", err)
	}
	defer forgetSession(url, id)
	defer sub.Disconnect(100)
	if err := waitToken(ctx, sub.Subscribe(topic, 1, nil)); err != nil {
		return 0, fmt.Errorf("subscribe: %w", err)
	}
	count := func() int { return int(got.Load()) }
	start, err := benchPublish(ctx, url, topic, n, ahead, count)
	if err != nil {
		return 0, err
	}
	if err := waitCount(ctx, count, n); err != nil {
		return 0, err
	}
	return (<-end).Sub(start), nil
}

func benchIngest(ctx context.Context, logger *slog.Logger, url, topic string, n, ahead int, window time.Duration) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "sensorstorm-bench")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	id := topic + "-sub"
	src, err := mqtt.NewSource(mqtt.Config{
		ConnConfig: mqtt.ConnConfig{Brokers: []string{url}, ClientID: id},
		Topics:     []string{topic},
		StateDir:   dir,
	})
	if err != nil {
		return 0, err
	}
	defer forgetSession(url, id)
	t, err := topology.New(topology.Config{
		Logger:       logger,
		Acking:       topology.AckingConfig{Enabled: true, MaxPending: pipeline.DefaultMQTTMaxPending},
		DrainTimeout: window + 10*time.Second,
	})
	if err != nil {
		return 0, err
	}
	t.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
	t.AddBolt("out", operation.Stateless(file.NewSink(io.Discard, particle.Nanosecond)),
		topology.BoltConfig{Buffer: syncbuffer.Config{Window: window}}).Input("mqtt", topology.Global())
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- t.Run(runCtx) }()
	st := src.Stats()
	stop := func() error {
		cancel()
		return <-errc
	}
	if err := waitCount(ctx, func() int { return int(min(st.Connects.Load(), 1)) }, 1); err != nil {
		return 0, errors.Join(err, stop())
	}
	start, err := benchPublish(ctx, url, topic, n, ahead, func() int { return int(st.Acked.Load()) })
	if err == nil {
		err = waitCount(ctx, func() int { return int(st.Emitted.Load()) }, n)
	}
	elapsed := time.Since(start)
	if err := errors.Join(err, stop()); err != nil {
		return 0, err
	}
	return elapsed, nil
}
