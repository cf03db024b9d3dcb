package httpwrite_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// BenchmarkHTTPWrite measures line protocol accepted over loopback HTTP
// (a 1 MB body of the shipped recording per request, one keep-alive
// connection, spool on with its fsync, acking on, every particle through
// a bolt) against particle.Decoder alone on the same bytes, in the same
// run: each iteration posts the body and decodes it, timing both; the
// HTTP time also counts the wait, after the last write, for the pipeline
// to process every particle, since an answer no longer waits for the
// pipeline. It reports http-MB/s, decoder-MB/s and their ratio.
func BenchmarkHTTPWrite(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "library1-r1.lp"))
	if err != nil {
		b.Fatal(err)
	}
	lines := int64(bytes.Count(body, []byte("\n")))
	src, err := httpwrite.NewSource(httpwrite.Config{Addr: "127.0.0.1:0", StateDir: filepath.Join(b.TempDir(), "state")})
	if err != nil {
		b.Fatal(err)
	}
	var processed atomic.Int64
	topo, err := topology.New(topology.Config{Logger: slog.New(slog.DiscardHandler), Acking: topology.AckingConfig{Enabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	topo.AddSource("http", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("count", operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
		processed.Add(1)
		return nil
	})), topology.BoltConfig{Buffer: buffer}).Input("http", topology.Global())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- topo.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			b.Error(err)
		}
		if err := src.Close(); err != nil {
			b.Error(err)
		}
	}()
	<-src.Ready()
	url := "http://" + src.Addr().String() + "/api/v2/write?bucket=bench"
	client := &http.Client{}
	defer client.CloseIdleConnections()

	var viaHTTP, decoding time.Duration
	var p particle.Particle
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		start := time.Now()
		resp, err := client.Post(url, "text/plain", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			b.Fatalf("status %d", resp.StatusCode)
		}
		viaHTTP += time.Since(start)

		start = time.Now()
		d, err := particle.NewDecoderBytes(body, "bench", particle.DecoderConfig{})
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for d.Decode(&p) == nil {
			n++
		}
		decoding += time.Since(start)
		if n != lines {
			b.Fatalf("decoded %d lines, want %d", n, lines)
		}
	}
	start := time.Now()
	connectortest.WaitFor(b, time.Minute, "every particle processed", func() bool { return processed.Load() >= int64(b.N)*lines })
	viaHTTP += time.Since(start)
	mb := float64(b.N) * float64(len(body)) / 1e6
	b.ReportMetric(mb/viaHTTP.Seconds(), "http-MB/s")
	b.ReportMetric(mb/decoding.Seconds(), "decoder-MB/s")
	b.ReportMetric(decoding.Seconds()/viaHTTP.Seconds(), "http/decoder")
	st := src.Stats()
	if got, want := st.Emitted.Load(), uint64(b.N)*uint64(lines); got < want {
		b.Fatalf("emitted %d particles, want %d", got, want)
	}
}
