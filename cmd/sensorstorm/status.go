package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	replaysrc "github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/httpguard"
	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/statuspage"
	"github.com/sensorstorm/sensorstorm/topology"
)

// The connectors with a panel on the status page.
var (
	_ statuspage.Reporter = (*mqtt.Source)(nil)
	_ statuspage.Reporter = (*mqtt.Sink)(nil)
	_ statuspage.Reporter = (*httpwrite.Source)(nil)
	_ statuspage.Reporter = (*postgres.Sink)(nil)
)

// statusFlags are the flags of the status page.
type statusFlags struct {
	addr    string
	control bool
}

// register defines --http-addr and, for a command whose run the page can
// change (withControl), --http-control.
func (f *statusFlags) register(fs *flag.FlagSet, withControl bool) {
	fs.StringVar(&f.addr, "http-addr", "", "serve a live status page on `ADDR`, such as localhost:8088, with Prometheus metrics at /metrics"+addrUsage)
	if withControl {
		fs.BoolVar(&f.control, "http-control", false, "let the status page change the replay: speed, pause and resume\n"+
			"(POST /speed?factor=F|max, /pause, /resume on --http-addr); without it the page is read-only")
	}
}

// check completes the address; if it returns false, the command returns
// code.
func (f *statusFlags) check(c *cli) (int, bool) {
	if f.addr == "" {
		if f.control {
			return c.usageError("--http-control needs --http-addr"), false
		}
		return exitOK, true
	}
	addr, err := listenAddr(f.addr)
	if err != nil {
		return c.usageError("--http-addr: %v", err), false
	}
	f.addr = addr
	return exitOK, true
}

// tap returns the sampler of the page's plots, nil without a page: a nil
// tap installs nothing.
func (f *statusFlags) tap() *statuspage.Tap {
	if f.addr == "" {
		return nil
	}
	return statuspage.NewTap(statuspage.TapConfig{})
}

// serveStatus serves the status page of cfg on addr, if not empty, with
// cfg.Metrics or else the Prometheus metrics of its topology, until the
// returned stop is called; announce gets the page's URL.
func serveStatus(addr string, cfg statuspage.Config, announce func(url string)) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metricsRegistry(cfg.Topology)
	}
	page, err := statuspage.New(cfg)
	if err != nil {
		return nil, err
	}
	bound, stopHTTP, err := serveHTTP(addr, "status page", page, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("status page: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = page.Run(ctx) })
	announce("http://" + bound.String() + "/")
	return func() {
		// Run's end closes the event streams, which Shutdown would wait for.
		cancel()
		wg.Wait()
		stopHTTP()
	}, nil
}

// pageReplay returns the progress of src as the status page reads it.
func pageReplay(src *replaysrc.Source) func() statuspage.ReplayStatus {
	return func() statuspage.ReplayStatus {
		st := src.Status()
		r := statuspage.ReplayStatus{
			Speed: st.Speed.String(), Paused: st.Paused, Done: st.Done, Position: st.Position, First: st.First, Last: st.Last,
			Pass: st.Pass, Read: st.Read, Emitted: st.Emitted, Invalid: st.Invalid, Skipped: st.Skipped, Outside: st.Outside,
			BytesRead: st.BytesRead, BytesTotal: st.BytesTotal,
		}
		if st.Speed != replaysrc.Max {
			r.Pace = float64(st.Speed)
		}
		return r
	}
}

// metricsRegistry returns a registry of topo's metrics, the process's,
// and those of extra (a cluster worker's transport).
func metricsRegistry(topo topology.View, extra ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.New(topo, nil), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(extra...)
	return reg
}

// serveHTTP serves h, the endpoint named endpoint, on addr with
// httpguard's limits until the returned stop is called, and returns the
// address it listens on. Listening beyond loopback, it warns on logger:
// none of these endpoints authenticates its clients.
func serveHTTP(addr, endpoint string, h http.Handler, logger *slog.Logger) (net.Addr, func(), error) {
	ln, err := httpguard.Listen(addr, httpguard.Limits{})
	if err != nil {
		return nil, nil, err
	}
	httpguard.WarnExposed(logger, endpoint, ln.Addr())
	srv := httpguard.NewServer(h, httpguard.Limits{}, logger)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve returns ErrServerClosed on Shutdown, the only way it ends.
		_ = srv.Serve(ln)
	}()
	return ln.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
			srv.Close()
		}
		<-done
	}, nil
}
