package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sensorstorm/sensorstorm/cluster"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/pipeline"
)

// clusterFlags are the flags of run that make it a worker of a cluster.
type clusterFlags struct {
	url, worker, name string
	replicas          int
	rebalanceDelay    time.Duration
}

func registerClusterFlags(fs *flag.FlagSet) *clusterFlags {
	f := &clusterFlags{}
	fs.StringVar(&f.url, "cluster", "", "run as a worker of the NATS JetStream cluster at `URL` (nats://HOST:4222; commas for several servers); the pipeline's other workers run the same file with the same flag")
	fs.StringVar(&f.worker, "worker", "", "the worker's `NAME` in the cluster (default: host name and process id)")
	fs.StringVar(&f.name, "pipeline-name", "", "the pipeline's `NAME` in the cluster, the same on every worker (default: the file's base name)")
	fs.IntVar(&f.replicas, "replicas", 1, "replicate the pipeline's stream and buckets on `N` servers (3 on a 3-node cluster)")
	fs.DurationVar(&f.rebalanceDelay, "rebalance-delay", cluster.DefaultRebalanceDelay, "how long a worker keeps running a unit or an MQTT source instance after the workers changed and it was assigned to another: they move for balance only once the workers stayed the same that long")
	return f
}

// join makes this process a worker of the cluster when --cluster is set:
// it connects, joins, sets opts to build the pipeline as a worker, and
// starts announcing. stop ends that and disconnects. w and stop are nil
// without --cluster.
func (f *clusterFlags) join(ctx context.Context, p *pipeline.Pipeline, opts *pipeline.Options, logger *slog.Logger) (w *cluster.Worker, stop func(), err error) {
	if f.url == "" {
		return nil, nil, nil
	}
	if err := p.CheckCluster(); err != nil {
		return nil, nil, fmt.Errorf("--cluster: %w", err)
	}
	name := f.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))
	}
	nc, err := nats.Connect(f.url, nats.Name("sensorstorm "+f.worker), nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, fmt.Errorf("--cluster: %w", err)
	}
	joinCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := checkNotFinished(joinCtx, nc, p, name); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("--cluster: %w", err)
	}
	w, err = cluster.Join(joinCtx, nc, cluster.Config{
		Pipeline: name, Worker: f.worker, Logger: logger, RebalanceDelay: f.rebalanceDelay,
		Edges: jetstreamedge.Config{Replicas: f.replicas},
	})
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("--cluster: %w", err)
	}
	opts.Transport, opts.Lease, opts.LeaseLiveSource, opts.Incarnation = w.Transport(), w.LeaseSource, w.LeaseLiveSource, w.Incarnation()
	opts.Cluster, opts.Worker, opts.Checkpoints = name, w.Name(), w.CheckpointStore()
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	var (
		wg     sync.WaitGroup
		runErr error
	)
	wg.Go(func() { runErr = w.Run(runCtx) })
	logger.Info("joined the cluster", "url", f.url, "pipeline", name, "worker", w.Name(),
		"note", "a worker runs until interrupted, then hands its share over: see sensorstorm cluster status")
	return w, func() {
		stopRun()
		wg.Wait()
		if runErr != nil {
			logger.Warn("leaving the cluster", "worker", w.Name(), "err", runErr)
		}
		nc.Close()
	}, nil
}

// checkNotFinished returns an error when the pipeline name already ran to
// its end on the cluster: every instance of its recordings is marked done,
// so that a worker would replay nothing and end at once with no output.
// A pipeline with live sources never ends, and one not run before has no
// status to read.
func checkNotFinished(ctx context.Context, nc *nats.Conn, p *pipeline.Pipeline, name string) error {
	if p.Live() {
		return nil
	}
	st, err := cluster.ReadPipelineStatus(ctx, nc, name)
	if err != nil {
		return nil
	}
	instances := 0
	for _, src := range p.Sources {
		instances += max(src.Parallelism, 1)
	}
	if len(st.Leases) > 0 || len(st.Done) < instances {
		return nil
	}
	tok := jetstreamedge.Token(name)
	return fmt.Errorf("pipeline %q already ran to its end on this cluster: its recordings are marked done, so a worker would replay nothing. "+
		"Run it again under a new name (--pipeline-name %s-2), or delete its stream %s, its key-value buckets sensorstorm_%s_* and its object store %s first "+
		"(the units' checkpoints: a unit would restore the last run's)",
		name, name, jetstreamedge.StreamName(name), tok, cluster.CheckpointBucket(name))
}

// leaveTimeout bounds the hand-over of an interrupted worker: a live
// source instance waits up to a lease TTL for JetStream to confirm what
// it emitted, a unit about a second.
const leaveTimeout = 2 * cluster.DefaultLeaseTTL

// leaveOnInterrupt returns the context to run the pipeline with on a
// cluster: once ctx ends (the first SIGINT or SIGTERM), the worker hands
// its share over to the others (cluster.Worker.Leave, for leaveTimeout at
// most), then the context ends; a second SIGINT or SIGTERM ends it at
// once, leaving the rest to expire as after a kill. Call stop once the
// run returned.
func leaveOnInterrupt(ctx context.Context, w *cluster.Worker, logger *slog.Logger) (runCtx context.Context, stop func()) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancel()
		select {
		case <-ctx.Done():
		case <-runCtx.Done():
			return
		}
		limit, stopLimit := context.WithTimeout(runCtx, leaveTimeout)
		defer stopLimit()
		leaveCtx, stopSignals := signal.NotifyContext(limit, os.Interrupt, syscall.SIGTERM)
		defer stopSignals()
		logger.Info("interrupted: handing this worker's share over to the others; interrupt again to stop at once",
			"worker", w.Name(), "within", leaveTimeout)
		start := time.Now()
		err := w.Leave(leaveCtx)
		switch {
		case err == nil:
			logger.Info("handed over: stopping", "worker", w.Name(), "elapsed", time.Since(start).Round(time.Millisecond))
		case errors.Is(err, cluster.ErrAlone):
			logger.Info("no other worker to hand over to: stopping", "worker", w.Name())
		case limit.Err() == nil:
			logger.Warn("interrupted again: stopping, what is not handed over moves once it expired", "worker", w.Name(), "err", err)
		default:
			logger.Warn("the hand-over ran out of time: stopping, what is not handed over moves once it expired", "worker", w.Name(), "err", err)
		}
	})
	return runCtx, func() {
		cancel()
		wg.Wait()
	}
}

const clusterUsage = `usage: sensorstorm cluster status --cluster URL [--pipeline NAME] [-o json]

Prints the state of every pipeline that runs on the NATS JetStream cluster
at URL, or of the pipeline NAME alone: its workers with their source leases, the units (bolt instances)
assigned to them and those they received data for, the sources replayed
or read (MQTT) now or done, and per unit whether a worker is pinned to it,
its lag (messages not yet delivered), the messages in progress, those
delivered again, and the event time before which it finished every
particle it received. -o json prints the same as a JSON array.
`

// clusterCommand runs "cluster status".
func clusterCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("cluster", clusterUsage, stderr)
	url := c.fs.String("cluster", "", "the NATS JetStream cluster at `URL`, such as nats://127.0.0.1:4222")
	name := c.fs.String("pipeline", "", "show the pipeline `NAME` alone (its --pipeline-name, or its file's base name)")
	var output string
	setOutput := func(v string) error {
		if v != "text" && v != "json" {
			return fmt.Errorf("want text or json, got %q", v)
		}
		output = v
		return nil
	}
	c.fs.Func("output", "output `FORMAT`: text (default) or json", setOutput)
	c.fs.Func("o", "short for --output (`FORMAT`)", setOutput)
	rest, code, ok := c.parse(args, stdout)
	if !ok {
		return code
	}
	if len(rest) != 1 || rest[0] != "status" {
		return c.usageError("want the subcommand status")
	}
	if *url == "" {
		return c.usageError("--cluster is required")
	}
	nc, err := nats.Connect(*url)
	if err != nil {
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return exitError
	}
	defer nc.Close()
	readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var all []cluster.Status
	if *name != "" {
		st, err := cluster.ReadPipelineStatus(readCtx, nc, *name)
		if err != nil {
			fmt.Fprintf(stderr, "sensorstorm: pipeline %q: %v\n", *name, err)
			return exitError
		}
		all = []cluster.Status{st}
	} else if all, err = cluster.ReadStatus(readCtx, nc); err != nil {
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return exitError
	}
	if output == "json" {
		if all == nil {
			all = []cluster.Status{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			fmt.Fprintln(stderr, "sensorstorm:", err)
			return exitError
		}
		return exitOK
	}
	if len(all) == 0 {
		fmt.Fprintln(stdout, "no pipeline runs on", *url)
	}
	for i := range all {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := all[i].Write(stdout); err != nil {
			fmt.Fprintln(stderr, "sensorstorm:", err)
			return exitError
		}
	}
	return exitOK
}
