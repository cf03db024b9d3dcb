package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ran returns a topology that has run: three particles from a source, one
// failing in the bolt.
func ran(t *testing.T) *topology.Topology {
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true, MaxAttempts: 1}})
	require.NoError(t, err)
	topo.AddSource("src", topology.Single(topology.Retaining(func(ctx context.Context, out topology.SourceEmitter) error {
		for i := range 3 {
			if err := out.EmitTracked(particle.Particle{Time: int64(i+1) * 1e9, Measurement: "m", Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i))}}}, uint64(i)); err != nil {
				return err
			}
		}
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("bolt", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
		if in.Time == 2e9 {
			return io.ErrUnexpectedEOF
		}
		out.Emit(in)
		return nil
	})), topology.BoltConfig{}).Input("src", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	return topo
}

func TestCollector(t *testing.T) {
	topo := ran(t)
	c := metrics.New(topo, func() time.Time { return time.Unix(10, 0) })
	want := `
# HELP sensorstorm_particles_in_total Particles received by the component.
# TYPE sensorstorm_particles_in_total counter
sensorstorm_particles_in_total{component="bolt"} 3
sensorstorm_particles_in_total{component="src"} 0
# HELP sensorstorm_acked_total Trees of the source that completed.
# TYPE sensorstorm_acked_total counter
sensorstorm_acked_total{component="bolt"} 0
sensorstorm_acked_total{component="src"} 2
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "sensorstorm_particles_in_total", "sensorstorm_acked_total"))
	assert.Equal(t, 1.0, value(t, c, "sensorstorm_failed_total", "component=src", "reason=failed"))
	assert.Equal(t, 1.0, value(t, c, "sensorstorm_dead_letters_total", "component=src"))
	assert.Equal(t, 0.0, value(t, c, "sensorstorm_pending_trees"))
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// value returns the value of the metric of c named name whose labels
// include labels (name=value pairs).
func value(t *testing.T, c prometheus.Collector, name string, labels ...string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for _, l := range labels {
				k, v, _ := strings.Cut(l, "=")
				if have[k] != v {
					continue metric
				}
			}
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s with %v", name, labels)
	return 0
}

func TestScrapeOverHTTP(t *testing.T) {
	topo := ran(t)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(metrics.New(topo, nil)))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, want := range []string{
		`sensorstorm_particles_out_total{component="bolt"} 2`,
		`sensorstorm_failed_total{component="src",reason="failed"} 1`,
		`sensorstorm_late_total{component="bolt"} 0`,
		`sensorstorm_buffered_particles{component="bolt"} 0`,
		`sensorstorm_retried_total{component="src"} 0`,
		"sensorstorm_pending_trees 0",
	} {
		assert.Contains(t, string(body), want)
	}
	assert.NotContains(t, string(body), "Reason(", "every fail reason has a name")
	for _, r := range []string{"failed", "panic", "timeout", "expired", "rejected", "shutdown"} {
		assert.Contains(t, string(body), `sensorstorm_failed_total{component="src",reason="`+r+`"}`)
	}
}
