package influxdb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// base is the time of reading 0: 2023-11-14T22:13:20Z.
const base = 1_700_000_000_000_000_000

// reading returns the i-th test reading: sensor s<i%3>, an int and a float
// field, one millisecond apart (VictoriaMetrics keeps milliseconds).
func reading(i int) particle.Particle {
	return particle.Particle{
		Time:        base + int64(i)*1e6,
		Measurement: "reading",
		Tags:        []particle.Tag{{Key: "sensor", Value: fmt.Sprint("s", i%3)}},
		Fields:      []particle.Field{{Key: "n", Value: particle.Int(int64(i))}, {Key: "v", Value: particle.Float(float64(i) / 2)}},
	}
}

// readings returns the first n test readings.
func readings(n int) []particle.Particle {
	ps := make([]particle.Particle, n)
	for i := range ps {
		ps[i] = reading(i)
	}
	return ps
}

// newSink returns a Sink for cfg, closed when t ends.
func newSink(t testing.TB, cfg influxdb.Config) *influxdb.Sink {
	t.Helper()
	s, err := influxdb.NewSink(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// result is what a run of a topology into a sink came to.
type result struct {
	err    error
	acked  map[uint64]int
	failed map[uint64]error
	dead   []topology.DeadLetter
	topo   *topology.Topology
}

// run runs a topology with acking in which a tracked source emits ps into
// sink, calling before(i) before particle i when set, and returns once it
// stopped.
func run(t testing.TB, sink operation.Operation, ps []particle.Particle, before func(i int)) result {
	t.Helper()
	var dead connectortest.DeadLetters
	src := &trackedSource{ps: ps, before: before, acked: map[uint64]int{}, failed: map[uint64]error{}}
	topo, err := topology.New(topology.Config{
		Replay:      true,
		Acking:      topology.AckingConfig{Enabled: true},
		DeadLetters: &dead,
		Destination: topology.DestinationConfig{InitialInterval: 10 * time.Millisecond, MaxInterval: 200 * time.Millisecond},
	})
	require.NoError(t, err)
	topo.AddSource("gen", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("write", operation.Stateless(sink), topology.BoltConfig{}).Input("gen", topology.Global())
	err = topo.Run(context.Background())
	return result{err: err, acked: src.acked, failed: src.failed, dead: dead.All(), topo: topo}
}

// trackedSource emits ps tracked, numbered by their index, and notes what
// was acknowledged and failed. Run has returned when they are read.
type trackedSource struct {
	ps     []particle.Particle
	before func(i int)

	mu     sync.Mutex
	acked  map[uint64]int
	failed map[uint64]error
}

var _ topology.Acknowledger = (*trackedSource)(nil)

func (s *trackedSource) Run(_ context.Context, out topology.SourceEmitter) error {
	for i, p := range s.ps {
		if s.before != nil {
			s.before(i)
		}
		if err := out.EmitTracked(p, uint64(i)); err != nil {
			return nil
		}
	}
	return nil
}

func (s *trackedSource) Ack(id uint64) {
	s.mu.Lock()
	s.acked[id]++
	s.mu.Unlock()
}

func (s *trackedSource) Fail(id uint64, _ acker.Reason, err error) {
	s.mu.Lock()
	s.failed[id] = err
	s.mu.Unlock()
}

func (s *trackedSource) Redeliver(id uint64) (particle.Particle, error) { return s.ps[id], nil }

// waitUntil calls cond until it is true, for at most 30 s: for conditions
// outside the process's control, a server's. It may be called from a
// source's goroutine, so it reports a timeout with Errorf.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("timed out waiting until %s", what)
			return
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not timing
	}
}
