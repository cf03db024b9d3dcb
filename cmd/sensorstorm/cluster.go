package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
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
// starts announcing. stop ends that and disconnects; it is nil without
// --cluster.
func (f *clusterFlags) join(ctx context.Context, p *pipeline.Pipeline, opts *pipeline.Options, logger *slog.Logger) (stop func(), err error) {
	if f.url == "" {
		return nil, nil
	}
	if err := p.CheckCluster(); err != nil {
		return nil, fmt.Errorf("--cluster: %w", err)
	}
	name := f.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))
	}
	nc, err := nats.Connect(f.url, nats.Name("sensorstorm "+f.worker), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("--cluster: %w", err)
	}
	joinCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := cluster.Join(joinCtx, nc, cluster.Config{
		Pipeline: name, Worker: f.worker, Logger: logger, RebalanceDelay: f.rebalanceDelay,
		Edges: jetstreamedge.Config{Replicas: f.replicas},
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("--cluster: %w", err)
	}
	opts.Transport, opts.Lease, opts.LeaseFeed, opts.Incarnation = w.Transport(), w.LeaseSource, w.LeaseFeed, w.Incarnation()
	opts.Cluster, opts.Worker = name, w.Name()
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(runCtx) })
	logger.Info("joined the cluster", "url", f.url, "pipeline", name, "worker", w.Name(),
		"note", "a worker runs until interrupted: see sensorstorm cluster status")
	return func() {
		stopRun()
		wg.Wait()
		nc.Close()
	}, nil
}

const clusterUsage = `usage: sensorstorm cluster status --cluster URL

Prints the state of every pipeline that runs on the NATS JetStream cluster
at URL: its workers with their source leases, the units (bolt instances)
assigned to them and those they received data for, the sources replayed
or read (MQTT) now or done, and per unit whether a worker is pinned to it,
its lag (messages not yet delivered), the messages in progress, those
delivered again, and the event time before which it finished every
particle it received.
`

// clusterCommand runs "cluster status".
func clusterCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("cluster", clusterUsage, stderr)
	url := c.fs.String("cluster", "", "the NATS JetStream cluster at `URL`, such as nats://127.0.0.1:4222")
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
	all, err := cluster.ReadStatus(readCtx, nc)
	if err != nil {
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return exitError
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
