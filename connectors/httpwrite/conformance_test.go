package httpwrite_test

import (
	"bytes"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// TestSourceConformance runs the suite's source scenarios. KillMidStream
// is left out: the suite publishes while the killed source is down and
// expects upstream to keep what it took, where an HTTP client retries
// (cmd/sensorstorm's TestIngestHTTPWriteCrash kills and restarts ingest
// under InfluxDB's client instead).
func TestSourceConformance(t *testing.T) {
	connectortest.TestSource(t, connectortest.Features{}, func(t *testing.T, _ *connectortest.Env) connectortest.SourceHarness {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		return &sourceHarness{addr: addr, state: filepath.Join(t.TempDir(), "state")}
	})
}

// sourceHarness writes each reading as one InfluxDB 2.x write.
type sourceHarness struct {
	addr, state string
}

func (h *sourceHarness) NewSource(t testing.TB) topology.Source {
	src, err := httpwrite.NewSource(httpwrite.Config{Addr: h.addr, StateDir: h.state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// Publish writes the readings one request each, writing again while the
// source does not listen yet or answers 503, as InfluxDB's clients do.
func (h *sourceHarness) Publish(t testing.TB, readings []particle.Particle) {
	url := "http://" + h.addr + "/api/v2/write?bucket=conformance"
	for i := range readings {
		line, err := particle.AppendLineProtocol(nil, &readings[i], particle.Nanosecond)
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			resp, err := http.Post(url, "text/plain", bytes.NewReader(line))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusNoContent {
					break
				}
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("write: status %d", resp.StatusCode)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("write: not taken in 30s: %v", err)
			}
		}
	}
}
