package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/topology"
)

// runPipeline runs a pipeline file until its sources end or ctx is
// cancelled, serving Prometheus metrics on --metrics-addr.
func runPipeline(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics on this address (for example :9090) at /metrics")
	dir := fs.String("dir", "", "resolve the pipeline's relative paths against this directory (default: the current one)")
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sensorstorm run [flags] PIPELINE.yaml")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	p, err := pipeline.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	topo, err := p.Build(pipeline.Options{Dir: *dir, Stdout: stdout, Logger: logger, DeadLetters: &deadLetterLog{logger: logger}})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	if *metricsAddr != "" {
		stop, err := serveMetrics(*metricsAddr, topo.Topology, logger)
		if err != nil {
			fmt.Fprintln(stderr, "sensorstorm:", err)
			return exitError
		}
		defer stop()
	}
	logger.Info("pipeline started", "file", p.File, "sources", len(p.Sources), "bolts", len(p.Bolts))
	if p.Live() {
		logger.Info("reading MQTT feeds until interrupted: SIGINT or SIGTERM drains and stops")
	}
	start := time.Now()
	runErr := topo.Run(ctx)
	for _, name := range topo.Components() {
		s := topo.Stats(name)
		logger.Info("component done", "component", name, "in", s.In.Load(), "out", s.Out.Load(), "late", s.Late.Load(),
			"invalid", s.Invalid.Load(), "errors", s.Errors.Load(), "acked", s.Acked.Load(), "failed", s.Failed.Load())
	}
	logger.Info("pipeline finished", "elapsed", time.Since(start).Round(time.Millisecond))
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		fmt.Fprintln(stderr, "sensorstorm:", runErr)
		return exitError
	}
	return exitOK
}

// serveMetrics serves /metrics on addr until the returned stop is called.
func serveMetrics(addr string, topo *topology.Topology, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.New(topo, nil), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "err", err)
		}
	}()
	logger.Info("serving metrics", "addr", ln.Addr().String(), "path", "/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// validatePipeline checks a pipeline file without running it: its syntax,
// its components and operations, and that its input files (recordings,
// TLS certificates) can be read. It does not connect to MQTT brokers.
func validatePipeline(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "resolve the pipeline's relative paths against this directory (default: the current one)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sensorstorm validate [-dir DIR] PIPELINE.yaml")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "known op types:", pipeline.OpTypes())
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	p, err := pipeline.Load(fs.Arg(0))
	if err == nil {
		err = p.Check(*dir)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s: ok: %d sources, %d bolts\n", p.File, len(p.Sources), len(p.Bolts))
	return exitOK
}
