package file_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// emitter records what an operation does with its inputs. Process is
// called with cur set to the input's name.
type emitter struct {
	cur    string
	next   operation.Anchor
	held   map[operation.Anchor]string
	acked  []string
	failed []string
}

func newEmitter() *emitter { return &emitter{held: map[operation.Anchor]string{}} }

func (e *emitter) Emit(particle.Particle)                              {}
func (e *emitter) EmitAnchored(particle.Particle, ...operation.Anchor) {}
func (e *emitter) Hold() operation.Anchor                              { e.next++; e.held[e.next] = e.cur; return e.next }
func (e *emitter) Ack(a operation.Anchor)                              { e.acked = append(e.acked, e.take(a)) }
func (e *emitter) Fail(a operation.Anchor, _ error)                    { e.failed = append(e.failed, e.take(a)) }
func (e *emitter) take(a operation.Anchor) string                      { n := e.held[a]; delete(e.held, a); return n }
func (e *emitter) process(t *testing.T, op operation.Operation, v float64) error {
	t.Helper()
	e.cur = fmt.Sprint(v)
	return op.Process(context.Background(), reading(v), e)
}

func reading(v float64) particle.Particle {
	return particle.Particle{Time: int64(v) * 1e9, Measurement: "t", Fields: []particle.Field{{Key: "v", Value: particle.Float(v)}}}
}

func line(t *testing.T, p particle.Particle) string {
	t.Helper()
	b, err := particle.AppendLineProtocol(nil, &p, particle.Second)
	require.NoError(t, err)
	return string(b)
}

// flaky fails its writes while down, after writing half of what it is
// given, and counts Sync and Close calls.
type flaky struct {
	strings.Builder
	down          bool
	syncs, closes int
}

func (f *flaky) Write(p []byte) (int, error) {
	if f.down {
		n, _ := f.Builder.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return f.Builder.Write(p)
}

func (f *flaky) Sync() error {
	if f.down {
		return syscall.EIO
	}
	f.syncs++
	return nil
}

func (f *flaky) Close() error { f.closes++; return nil }

func TestSinkAcksOnlyWhatIsWritten(t *testing.T) {
	ctx := context.Background()
	settles := []struct {
		name   string
		settle func(*file.Sink, operation.Emitter) error
	}{
		{"watermark", func(s *file.Sink, e operation.Emitter) error { return s.OnWatermark(ctx, 0, e) }},
		{"tick", func(s *file.Sink, e operation.Emitter) error { return s.OnTick(ctx, 0, e) }},
		{"end of stream", func(s *file.Sink, e operation.Emitter) error { return s.Flush(ctx, e) }},
	}
	for _, tt := range settles {
		t.Run(tt.name, func(t *testing.T) {
			var w flaky
			s := file.NewSink(&w, particle.Second)
			e := newEmitter()
			require.NoError(t, e.process(t, s, 1))
			require.NoError(t, e.process(t, s, 2))
			assert.Empty(t, w.String(), "gathered, not written")
			assert.Empty(t, e.acked, "nothing acknowledged before it is written")
			require.NoError(t, tt.settle(s, e))
			assert.Equal(t, line(t, reading(1))+line(t, reading(2)), w.String())
			assert.Len(t, e.acked, 2)
			assert.Equal(t, uint64(2), s.Written())
			require.NoError(t, s.Close())
			assert.Zero(t, w.closes, "a writer the sink did not open stays open")
		})
	}
}

func TestSinkWritesWhenTheBufferFills(t *testing.T) {
	var w flaky
	s, err := file.NewSinkConfig(&w, file.SinkConfig{Precision: particle.Second, BufferSize: 1})
	require.NoError(t, err)
	e := newEmitter()
	require.NoError(t, e.process(t, s, 1))
	assert.Equal(t, line(t, reading(1)), w.String())
	assert.Len(t, e.acked, 1)
	_, err = file.NewSinkConfig(&w, file.SinkConfig{BufferSize: -1})
	assert.Error(t, err)
}

// TestSinkDestinationFailure checks that a failing writer makes the sink
// keep its lines and inputs, neither acknowledged nor failed, refuse new
// inputs with a destination failure, and write everything exactly once
// when the writer recovers.
func TestSinkDestinationFailure(t *testing.T) {
	ctx := context.Background()
	w := flaky{down: true}
	s, err := file.NewSinkConfig(&w, file.SinkConfig{Precision: particle.Second, Fsync: true})
	require.NoError(t, err)
	e := newEmitter()
	require.NoError(t, e.process(t, s, 1))
	require.NoError(t, e.process(t, s, 2))

	err = s.OnWatermark(ctx, 0, e)
	var we *file.WriteError
	require.ErrorAs(t, err, &we)
	assert.ErrorIs(t, err, operation.ErrDestination)
	assert.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorIs(t, s.OnTick(ctx, 0, e), operation.ErrDestination, "tried again, still failing")
	err = e.process(t, s, 3)
	require.ErrorIs(t, err, operation.ErrDestination, "no new input while the destination fails")
	assert.Len(t, e.held, 2, "the refused input is not held")
	assert.Empty(t, e.acked)
	assert.Empty(t, e.failed)
	require.ErrorIs(t, s.Flush(ctx, e), operation.ErrDestination)
	assert.Empty(t, e.acked)

	w.down = false
	require.NoError(t, e.process(t, s, 3))
	require.NoError(t, s.OnTick(ctx, 0, e))
	assert.Equal(t, line(t, reading(1))+line(t, reading(2))+line(t, reading(3)), w.String(), "each line once, whole")
	assert.Len(t, e.acked, 3)
	assert.Empty(t, e.failed)
	assert.Positive(t, w.syncs)

	// Fsync failing after the write succeeded: still not acknowledged.
	s2, err := file.NewSinkConfig(&syncFails{}, file.SinkConfig{Fsync: true})
	require.NoError(t, err)
	e2 := newEmitter()
	require.NoError(t, e2.process(t, s2, 1))
	require.ErrorIs(t, s2.OnWatermark(ctx, 0, e2), syscall.EIO)
	assert.Empty(t, e2.acked)
}

type syncFails struct{ strings.Builder }

func (*syncFails) Sync() error { return syscall.EIO }

func TestSinkBadDataFailsItsInput(t *testing.T) {
	s := file.NewSink(io.Discard, particle.Second)
	e := newEmitter()
	err := s.Process(context.Background(), particle.Particle{Measurement: "t"}, e) // no field
	require.Error(t, err)
	assert.NotErrorIs(t, err, operation.ErrDestination)
	assert.Empty(t, e.held)
}

func TestSinkInstancesAckThroughTheirOwnEmitter(t *testing.T) {
	ctx := context.Background()
	var w flaky
	s := file.NewSink(&w, particle.Second)
	a, b := newEmitter(), newEmitter()
	require.NoError(t, a.process(t, s, 1))
	require.NoError(t, b.process(t, s, 2))
	require.NoError(t, a.process(t, s, 3))
	require.NoError(t, s.OnWatermark(ctx, 0, a))
	assert.Len(t, a.acked, 2)
	assert.Empty(t, b.acked, "b's input is acknowledged by b's own call")
	require.NoError(t, s.OnTick(ctx, 0, b))
	assert.Len(t, b.acked, 1)
	assert.Equal(t, 3, strings.Count(w.String(), "\n"))
}

func TestOpenSink(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.lp")
	write := func(cfg file.SinkConfig, v float64) {
		cfg.Precision = particle.Second
		s, err := file.OpenSink(path, cfg)
		require.NoError(t, err)
		e := newEmitter()
		require.NoError(t, e.process(t, s, v))
		require.NoError(t, s.Flush(ctx, e))
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "a second Close does nothing")
		assert.ErrorIs(t, e.process(t, s, v), file.ErrSinkClosed)
	}
	write(file.SinkConfig{Fsync: true}, 1)
	write(file.SinkConfig{Append: true}, 2)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, line(t, reading(1))+line(t, reading(2)), string(b))
	write(file.SinkConfig{}, 3)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, line(t, reading(3)), string(b), "truncated without Append")

	_, err = file.OpenSink(filepath.Join(path, "no", "such"), file.SinkConfig{})
	assert.Error(t, err)
	var we *file.WriteError
	assert.False(t, errors.As(err, &we), "opening is not writing")
}
