package connectortest

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// Recording returns the first n particles (every one when n is 0) of
// the line-protocol recording at path, such as testdata/library1-r1.lp,
// for a sink's checkpoint tests to write. It fails t when the file cannot
// be read whole.
func Recording(t testing.TB, path string, n int) []particle.Particle {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := particle.NewDecoder(f, path, particle.DecoderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var ps []particle.Particle
	for n == 0 || len(ps) < n {
		var p particle.Particle
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p.Clone())
	}
	return ps
}

// Sink is a sink operation that the engine ticks, as the file, InfluxDB
// and PostgreSQL sinks are.
type Sink interface {
	operation.Operation
	operation.TickHandler
}

// Feed processes ps into s through out, as the engine would, with a tick
// after every tickEvery particles, which makes the sink write what it
// holds. It fails t at the first error.
func Feed(t testing.TB, s Sink, out operation.Emitter, ps []particle.Particle, tickEvery int) {
	t.Helper()
	ctx := context.Background()
	for i := range ps {
		if err := s.Process(ctx, ps[i], out); err != nil {
			t.Fatalf("particle %d: %v", i, err)
		}
		if i%tickEvery == tickEvery-1 {
			if err := s.OnTick(ctx, 0, out); err != nil {
				t.Fatalf("tick after particle %d: %v", i, err)
			}
		}
	}
}

// Snapshot returns the snapshot of op, as the engine takes it at a
// checkpoint. It fails t when Snapshot fails.
func Snapshot(t testing.TB, op operation.Snapshotter) []byte {
	t.Helper()
	var w state.Writer
	if err := op.Snapshot(&w); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return w.Bytes()
}
