package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/statuspage"
)

const runUsage = `usage: sensorstorm run [flags] PIPELINE.yaml

Runs a pipeline file until its sources end (recordings) or until SIGINT or
SIGTERM (MQTT feeds), then writes what each component did, the backlog
each spooled source leaves (run: source=NAME backlog=N backlog_bytes=B,
processed first at the next start) and, last on stderr, a summary of the
records the sources read:
  summary: read=N emitted=N late=N invalid=N skipped=N outside=N duplicates=N refused=N
where read = emitted + late + invalid + skipped + outside + duplicates,
late, invalid and duplicates counted at the first bolt reading each source,
and refused counts the emitted records dead-lettered as failed.
It exits 1 if every record read was invalid.

With --cluster, the first SIGINT or SIGTERM makes the worker hand its share
over to the pipeline's other workers before it stops, for 20 s at most:
its MQTT source instances, once JetStream confirmed what they emitted, and
its bolt instances (a recording it replays is not handed over: another
worker resumes it once its lease expired). A second signal, or no other
worker, stops it at once.
`

// runPipeline runs a pipeline file until its sources end or ctx is
// cancelled, serving Prometheus metrics on --metrics-addr.
func runPipeline(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("run", runUsage, stderr)
	metricsAddr := c.fs.String("metrics-addr", "", "serve Prometheus metrics at /metrics on `ADDR`, such as localhost:9090"+addrUsage)
	dir := c.fs.String("dir", "", "resolve the pipeline's relative paths against this `DIR` (default: the pipeline file's directory)")
	var deadLetter string
	registerDeadLetter(c.fs, &deadLetter)
	var status statusFlags
	status.register(c.fs, false)
	clusterOpts := registerClusterFlags(c.fs)
	rest, code, ok := c.parse(args, stdout)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return c.usageError("want one pipeline file, got %d arguments", len(rest))
	}
	if code, ok := status.check(c); !ok {
		return code
	}
	if *metricsAddr != "" {
		addr, err := listenAddr(*metricsAddr)
		if err != nil {
			return c.usageError("--metrics-addr: %v", err)
		}
		*metricsAddr = addr
	}
	logger, logs := c.log.logger(stderr)
	defer logs.Summarize(ctx)
	p, err := pipeline.Load(rest[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	ctx, stopDead := context.WithCancelCause(ctx)
	defer stopDead(nil)
	dead, err := openDeadLetters(deadLetter, logger, stopDead)
	if err != nil {
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return exitError
	}
	tap := status.tap()
	opts := pipeline.Options{Dir: *dir, Stdout: stdout, Logger: logger, DeadLetters: tap.DeadLetters(dead), WrapSource: tap.Source}
	worker, stopWorker, err := clusterOpts.join(ctx, p, &opts, logger)
	if err != nil {
		dead.Close()
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return exitError
	}
	runCtx := ctx
	if worker != nil {
		defer stopWorker()
		var stopLeaving func()
		runCtx, stopLeaving = leaveOnInterrupt(ctx, worker, logger)
		defer stopLeaving()
	}
	topo, err := p.Build(opts)
	if err != nil {
		dead.Close()
		fmt.Fprintln(stderr, err)
		return exitError
	}
	var extra []prometheus.Collector
	if t, ok := opts.Transport.(*jetstreamedge.Transport); ok {
		extra = append(extra, jetstreamedge.NewCollector(t.Stats()))
	}
	extra = append(extra, postgresCollectors(p, topo)...)
	backlogs := pipelineBacklogs(p, topo)
	extra = append(extra, metrics.NewBacklogs(backlogs, nil))
	reg := metricsRegistry(topo, extra...)
	if *metricsAddr != "" {
		stop, err := serveMetrics(*metricsAddr, reg, logger)
		if err != nil {
			dead.Close()
			fmt.Fprintln(stderr, "sensorstorm:", err)
			return exitError
		}
		defer stop()
	}
	stopStatus, err := serveStatus(status.addr, statuspage.Config{Topology: topo, Title: "run " + p.File, Tap: tap, Logger: logger, Metrics: reg,
		Instances: topo.Instances},
		func(url string) { logger.Info("serving the status page", "url", url) })
	if err != nil {
		dead.Close()
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return exitError
	}
	defer stopStatus()
	logger.Info("pipeline started", "file", p.File, "sources", len(p.Sources), "bolts", len(p.Bolts))
	if p.Live() {
		logger.Info("reading live feeds until interrupted: SIGINT or SIGTERM drains and stops")
	}
	start := time.Now()
	runErr := errors.Join(topo.Run(runCtx), dead.Close())
	for _, name := range topo.Components() {
		s := topo.Stats(name)
		logger.Info("component done", "component", name, "in", dataIn(s), "out", s.Out.Load(), "late", s.Late.Load(),
			"invalid", s.Invalid.Load(), "errors", s.Errors.Load(), "acked", s.Acked.Load(), "failed", s.Failed.Load())
	}
	logger.Info("pipeline finished", "elapsed", time.Since(start).Round(time.Millisecond))
	report := c.log.reporter(stderr)
	for _, src := range p.Sources {
		b, ok := backlogs[src.Name]
		if !ok {
			continue
		}
		if attrs := backlogAttrs(b); attrs != nil {
			report.line("run", append([]slog.Attr{slog.String("source", src.Name)}, attrs...)...)
			writeBacklogKept(report, "run: "+src.Name, b, "its state_dir")
		}
	}
	code = exitOK
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		report.fail(runErr)
		code = exitError
	}
	return pipelineSummary(p, topo).write(report, code)
}

// pipelineSummary counts what the sources of p read and what the first
// bolt reading each source did with it.
func pipelineSummary(p *pipeline.Pipeline, topo *pipeline.Built) summary {
	var sum summary
	first := map[string]bool{}
	emitted := map[string]uint64{}
	for _, src := range p.Sources {
		out := sum.addSource(topo.Stats(src.Name))
		if st, ok := topo.ReplayStatus(src.Name); ok {
			sum.Read += st.Skipped + st.Outside
			sum.Skipped += st.Skipped
			sum.Outside += st.Outside
		}
		if b, ok := firstReader(p, src.Name); ok {
			first[b] = true
			emitted[b] += out
		} else {
			sum.Emitted += out
		}
	}
	sum.addRefused(topo.Stats, topo.Components())
	for _, b := range p.Bolts {
		if !first[b.Name] {
			continue
		}
		s := topo.Stats(b.Name)
		sum.addBolt(emitted[b.Name], s)
		if b.Op == "dedup" {
			// A dedup operation emits each particle it keeps.
			sum.duplicates(s.Processed.Load() - min(s.Processed.Load(), s.Out.Load()))
		}
		if st, ok := topo.PostgresStats(b.Name); ok {
			// Points that changed nothing in the table were read before.
			sum.duplicates(st.Duplicates.Load())
		}
	}
	return sum
}

// postgresCollectors returns the counters of the pipeline's PostgreSQL
// sinks, as sensorstorm_postgres_points_total by component and result.
func postgresCollectors(p *pipeline.Pipeline, topo *pipeline.Built) []prometheus.Collector {
	var cs []prometheus.Collector
	for _, b := range p.Bolts {
		st, ok := topo.PostgresStats(b.Name)
		if !ok {
			continue
		}
		for result, n := range map[string]*atomic.Uint64{"written": &st.Written, "merged": &st.Merged, "duplicate": &st.Duplicates, "rejected": &st.Rejected} {
			cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "sensorstorm_postgres_points_total",
				Help:        "Points a PostgreSQL sink wrote as new rows, merged into a row, dropped as duplicates (they changed nothing) or rejected.",
				ConstLabels: prometheus.Labels{"component": b.Name, "result": result},
			}, func() float64 { return float64(n.Load()) }))
		}
	}
	return cs
}

// firstReader returns the first bolt of p, in file order, reading the
// default stream of the source name.
func firstReader(p *pipeline.Pipeline, name string) (string, bool) {
	for _, b := range p.Bolts {
		for _, in := range b.Inputs {
			if in.From == name && in.Stream == "" {
				return b.Name, true
			}
		}
	}
	return "", false
}

// serveMetrics serves /metrics on addr until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, logger *slog.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	bound, stop, err := serveHTTP(addr, "metrics", mux, logger)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	logger.Info("serving metrics", "addr", bound.String(), "path", "/metrics")
	return stop, nil
}

const validateUsage = `usage: sensorstorm validate [flags] PIPELINE.yaml

Checks a pipeline file without running it: its syntax, its components and
operations, the graph (no cycles), broker URLs, and that its input files
(recordings, TLS certificates) can be read. Errors name the file, line and
column.

With --connect it then checks, without writing anything, what each source
and sink needs that retrying cannot fix, and prints a line for each:
  ok postgres sink 'db': table metrics.readings (insert allowed)
  fail mqtt source 'feed': mqtt: connecting to tcp://broker:1883 as ...: connection refused
PostgreSQL sinks: the database accepts the connection, the schema exists,
the table exists with columns the sink can write or the role may create
it, and the role may insert, select and update rows. MQTT sources and
sinks: a broker accepts the connection, under a probe's own client id
with a clean session, so that the pipeline's persistent sessions are left
alone. File sinks: the file can be written (a temporary file is made and
removed in its directory). HTTP sources: the address is free. InfluxDB
sinks are not checked. It exits 1 if any check fails.
`

// validatePipeline checks a pipeline file without running it and, with
// --connect, what its sources and sinks connect to.
func validatePipeline(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("validate", validateUsage, stderr)
	dir := c.fs.String("dir", "", "resolve the pipeline's relative paths against this `DIR` (default: the pipeline file's directory)")
	connect := c.fs.Bool("connect", false, "also check the databases, brokers, files and addresses of the sources and sinks, writing nothing")
	rest, code, ok := c.parse(args, stdout)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return c.usageError("want one pipeline file, got %d arguments; known op types: %s", len(rest), strings.Join(pipeline.OpTypes(), ", "))
	}
	p, err := pipeline.Load(rest[0])
	if err == nil {
		err = p.Check(*dir)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	if *connect {
		failed := 0
		probes := p.CheckConnections(ctx, *dir)
		for _, pr := range probes {
			switch {
			case pr.Err != nil:
				failed++
				fmt.Fprintf(stdout, "fail %s: %v\n", pr.Component, pr.Err)
			case pr.Skipped:
				fmt.Fprintf(stdout, "skip %s: %s\n", pr.Component, pr.Found)
			default:
				fmt.Fprintf(stdout, "ok %s: %s\n", pr.Component, pr.Found)
			}
		}
		if failed > 0 {
			fmt.Fprintf(stderr, "%s: %d of %d components failed their checks\n", p.File, failed, len(probes))
			return exitError
		}
	}
	fmt.Fprintf(stdout, "%s: ok: %d sources, %d bolts\n", p.File, len(p.Sources), len(p.Bolts))
	return exitOK
}
