package file_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// recording is the test recording.
const recording = "../../testdata/library1-r1.lp"

// feed processes ps into s as the engine would, with a tick every 97
// particles.
func feed(t *testing.T, s *file.Sink, e *connectortest.Emitter, ps []particle.Particle) {
	t.Helper()
	connectortest.Feed(t, s, e, ps, 97)
}

// TestSinkRestoresCheckpoints writes the test recording through a Sink
// killed after one or two snapshots, then restores a new Sink from one of
// them and writes the rest of the recording from that snapshot's point:
// the file is byte for byte the one of a run that was never killed,
// whichever snapshot is restored (a checkpoint whose snapshot was taken
// may never complete: then the one before is restored), with or without
// a torn line left by the crash, appending or truncating, whatever the
// buffer.
func TestSinkRestoresCheckpoints(t *testing.T) {
	ps := connectortest.Recording(t, recording, 0)
	const before = "old v=1 1\nold v=2 2\nold v=3" // an earlier run's output, its last line torn
	for _, tc := range []struct {
		name    string
		cfg     file.SinkConfig
		cuts    []int // where snapshots are taken
		restore int   // which of them is restored
		crashAt int   // where the sink is killed
		torn    bool  // the crash tore a line
	}{
		{name: "one snapshot", cuts: []int{3000}, crashAt: 5000},
		{name: "one snapshot torn", cuts: []int{3000}, crashAt: 5000, torn: true},
		{name: "second of two", cuts: []int{2000, 4000}, restore: 1, crashAt: 6000},
		{name: "first of two, the second never completed", cuts: []int{2000, 4000}, restore: 0, crashAt: 6000, torn: true},
		{name: "crash at the snapshot", cuts: []int{2500}, crashAt: 2500},
		{name: "snapshot before anything", cuts: []int{0}, crashAt: 1000, torn: true},
		{name: "append", cfg: file.SinkConfig{Append: true}, cuts: []int{2000, 4000}, restore: 0, crashAt: 6000, torn: true},
		{name: "append snapshot before anything", cfg: file.SinkConfig{Append: true}, cuts: []int{0}, crashAt: 1000},
		{name: "fsync, small buffer", cfg: file.SinkConfig{Fsync: true, BufferSize: 1000}, cuts: []int{1500, 3500}, restore: 1, crashAt: 7000, torn: true},
		{name: "append, small buffer", cfg: file.SinkConfig{Append: true, BufferSize: 333}, cuts: []int{10, 20}, restore: 0, crashAt: len(ps) - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// The run never killed.
			want := filepath.Join(dir, "want.lp")
			require.NoError(t, os.WriteFile(want, []byte(before), 0o644))
			s, err := file.OpenSink(want, tc.cfg)
			require.NoError(t, err)
			e := &connectortest.Emitter{}
			feed(t, s, e, ps)
			require.NoError(t, s.Flush(context.Background(), e))
			require.NoError(t, s.Close())
			assert.Equal(t, len(ps), e.Acked)

			path := filepath.Join(dir, "out.lp")
			require.NoError(t, os.WriteFile(path, []byte(before), 0o644))
			s, err = file.OpenSink(path, tc.cfg)
			require.NoError(t, err)
			e = &connectortest.Emitter{}
			var snaps [][]byte
			from := 0
			for _, cut := range tc.cuts {
				feed(t, s, e, ps[from:cut])
				snaps = append(snaps, connectortest.Snapshot(t, s))
				from = cut
			}
			feed(t, s, e, ps[from:tc.crashAt])
			file.Crash(s)
			if tc.torn {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				require.NoError(t, err)
				_, err = f.WriteString("wsn,deployment=library1,node=20 seq=1i,int_te")
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}

			s, err = file.OpenSink(path, tc.cfg)
			require.NoError(t, err)
			require.NoError(t, s.Restore(state.NewReader(snaps[tc.restore])))
			e = &connectortest.Emitter{}
			feed(t, s, e, ps[tc.cuts[tc.restore]:])
			require.NoError(t, s.Flush(context.Background(), e))
			require.NoError(t, s.Close())

			wantB, err := os.ReadFile(want)
			require.NoError(t, err)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, len(wantB), len(got))
			require.True(t, string(wantB) == string(got), "the restored run's file differs from the one never killed")
		})
	}
}

// TestSinkRestoreRefuses restores checkpoints that do not fit the file:
// each is refused with an error naming the file, and the file is left as
// it is.
func TestSinkRestoreRefuses(t *testing.T) {
	ps := connectortest.Recording(t, recording, 500)
	for _, tc := range []struct {
		name string
		// damage changes the file after the crash and returns the path
		// the new sink opens.
		damage func(t *testing.T, path string) string
		is     error
		msg    string
	}{
		{name: "shorter", damage: func(t *testing.T, path string) string {
			require.NoError(t, os.Truncate(path, 1000))
			return path
		}, is: file.ErrNotRestorable, msg: "the file has 1000 bytes, the checkpoint recorded"},
		{name: "missing", damage: func(t *testing.T, path string) string {
			require.NoError(t, os.Remove(path))
			return path // OpenSink creates it empty
		}, is: file.ErrNotRestorable, msg: "the file was missing"},
		{name: "other bytes", damage: func(t *testing.T, path string) string {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(string(b), "node=20", "node=21")), 0o644))
			return path
		}, is: file.ErrNotRestorable, msg: "not those the checkpoint recorded"},
		{name: "another path", damage: func(t *testing.T, path string) string {
			other := filepath.Join(filepath.Dir(path), "other.lp")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(other, b, 0o644))
			return other
		}, is: operation.ErrStateMismatch, msg: "the checkpoint is of the file "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.lp")
			s, err := file.OpenSink(path, file.SinkConfig{})
			require.NoError(t, err)
			e := &connectortest.Emitter{}
			feed(t, s, e, ps[:300])
			snap := connectortest.Snapshot(t, s)
			feed(t, s, e, ps[300:])
			file.Crash(s)
			open := tc.damage(t, path)
			before, _ := os.ReadFile(open)

			s, err = file.OpenSink(open, file.SinkConfig{})
			require.NoError(t, err)
			err = s.Restore(state.NewReader(snap))
			require.ErrorIs(t, err, tc.is)
			assert.ErrorContains(t, err, tc.msg)
			abs, _ := filepath.Abs(open)
			assert.ErrorContains(t, err, abs, "the error names the file")
			s.Close()
			after, _ := os.ReadFile(open)
			assert.Equal(t, string(before), string(after), "a refused restore leaves the file alone")
		})
	}
}

// TestSinkSnapshotOnWriter checkpoints a Sink on a writer: it writes what
// it gathered and records no length, since it cannot cut its writer back
// (at least once); a checkpoint of a writer and one of a file do not
// restore into each other.
func TestSinkSnapshotOnWriter(t *testing.T) {
	ps := connectortest.Recording(t, recording, 200)
	var out strings.Builder
	s := file.NewSink(&out, particle.Nanosecond)
	e := &connectortest.Emitter{}
	for i := range ps[:100] {
		require.NoError(t, s.Process(context.Background(), ps[i], e))
	}
	snap := connectortest.Snapshot(t, s)
	assert.Equal(t, 100, strings.Count(out.String(), "\n"), "a snapshot writes what the sink gathered")
	require.NoError(t, s.OnTick(context.Background(), 0, e))
	assert.Equal(t, 100, e.Acked, "and the next call acknowledges it")

	again := file.NewSink(&out, particle.Nanosecond)
	require.NoError(t, again.Restore(state.NewReader(snap)))

	path := filepath.Join(t.TempDir(), "out.lp")
	onFile, err := file.OpenSink(path, file.SinkConfig{})
	require.NoError(t, err)
	defer onFile.Close()
	require.ErrorIs(t, onFile.Restore(state.NewReader(snap)), operation.ErrStateMismatch)
	require.ErrorIs(t, onFile.Process(context.Background(), ps[0], e), operation.ErrStateMismatch, "a refused restore leaves the sink unusable")
	onFile, err = file.OpenSink(path, file.SinkConfig{})
	require.NoError(t, err)
	defer onFile.Close()
	fileSnap := connectortest.Snapshot(t, onFile)
	err = file.NewSink(io.Discard, particle.Nanosecond).Restore(state.NewReader(fileSnap))
	require.ErrorIs(t, err, operation.ErrStateMismatch)
	assert.ErrorContains(t, err, path)
}

// TestSinkSnapshotRefusesInstances checkpoints a file Sink that two bolt
// instances use: no one length of the file is a consistent cut, so the
// snapshot is refused.
func TestSinkSnapshotRefusesInstances(t *testing.T) {
	ps := connectortest.Recording(t, recording, 2)
	s, err := file.OpenSink(filepath.Join(t.TempDir(), "out.lp"), file.SinkConfig{})
	require.NoError(t, err)
	defer s.Close()
	a, b := &connectortest.Emitter{}, &connectortest.Emitter{}
	require.NoError(t, s.Process(context.Background(), ps[0], a))
	connectortest.Snapshot(t, s)
	require.NoError(t, s.Process(context.Background(), ps[1], b))
	assert.ErrorContains(t, s.Snapshot(&state.Writer{}), "used by 2 bolt instances")
}

// TestOpenSinkTruncatesAtFirstWrite opens a file without Append: it is
// left as it is until the sink writes or closes, so that a restore could
// keep it.
func TestOpenSinkTruncatesAtFirstWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.lp")
	require.NoError(t, os.WriteFile(path, []byte("old v=1 1\n"), 0o644))
	s, err := file.OpenSink(path, file.SinkConfig{})
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old v=1 1\n", string(b), "not truncated at open")
	require.NoError(t, s.Close())
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Empty(t, b, "truncated at close, as it was at open before")
}

// TestSinkAdoptsTheCheckpointsFile moves a Sink between two workers, each
// with a file of its own, as a cluster does: the second restores a
// snapshot the first took and, where the first's file is there, goes on
// writing it from the snapshot's length, so that the first's file is the
// whole output and the second's is gone; where it is not, the second
// writes its own file from the snapshot on.
func TestSinkAdoptsTheCheckpointsFile(t *testing.T) {
	ps := connectortest.Recording(t, recording, 0)
	cfg := file.SinkConfig{Append: true, Adopt: true}
	var want strings.Builder
	for i := range ps {
		line, err := particle.AppendLineProtocol(nil, &ps[i], particle.Nanosecond)
		require.NoError(t, err)
		want.Write(line)
	}
	for _, tc := range []struct {
		name    string
		missing bool // the first worker's file is not where the second runs
	}{{name: "file there"}, {name: "file missing", missing: true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w1, w2 := filepath.Join(dir, "out.w1.lp"), filepath.Join(dir, "out.w2.lp")
			s1, err := file.OpenSink(w1, cfg)
			require.NoError(t, err)
			e := &connectortest.Emitter{}
			feed(t, s1, e, ps[:3000])
			snap := connectortest.Snapshot(t, s1)
			feed(t, s1, e, ps[3000:5000])
			file.Crash(s1)
			if tc.missing {
				require.NoError(t, os.Rename(w1, filepath.Join(dir, "elsewhere.lp")))
			}

			s2, err := file.OpenSink(w2, cfg)
			require.NoError(t, err)
			e = &connectortest.Emitter{}
			require.NoError(t, s2.Restore(state.NewReader(snap)))
			feed(t, s2, e, ps[3000:])
			require.NoError(t, s2.Flush(context.Background(), e))
			require.NoError(t, s2.Close())

			if tc.missing {
				got, err := os.ReadFile(w2)
				require.NoError(t, err)
				require.True(t, strings.HasSuffix(want.String(), string(got)), "the second worker's file holds what came after the checkpoint")
				require.Len(t, got, len(want.String())-len(wantPrefix(t, ps[:3000])))
				return
			}
			got, err := os.ReadFile(w1)
			require.NoError(t, err)
			require.True(t, want.String() == string(got), "the first worker's file is the whole output, each line once")
			_, err = os.Stat(w2)
			require.ErrorIs(t, err, os.ErrNotExist, "the second worker's empty file is gone")
		})
	}
}

// A Sink that adopts and is restored after it wrote, as a unit that comes
// back to its worker is, cuts its own file back to the checkpoint and
// goes on: the file it created is its own output, not a missing one.
func TestSinkAdoptingRestoresItsOwnFileAfterWrites(t *testing.T) {
	ps := connectortest.Recording(t, recording, 0)
	path := filepath.Join(t.TempDir(), "out.w1.lp")
	s, err := file.OpenSink(path, file.SinkConfig{Append: true, Adopt: true})
	require.NoError(t, err)
	e := &connectortest.Emitter{}
	feed(t, s, e, ps[:3000])
	snap := connectortest.Snapshot(t, s)
	feed(t, s, e, ps[3000:4000])
	require.NoError(t, s.Restore(state.NewReader(snap)))
	feed(t, s, e, ps[3000:])
	require.NoError(t, s.Flush(context.Background(), e))
	require.NoError(t, s.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, wantPrefix(t, ps) == string(got), "each line once")
}

// wantPrefix returns the lines of ps.
func wantPrefix(t *testing.T, ps []particle.Particle) string {
	t.Helper()
	var b strings.Builder
	for i := range ps {
		line, err := particle.AppendLineProtocol(nil, &ps[i], particle.Nanosecond)
		require.NoError(t, err)
		b.Write(line)
	}
	return b.String()
}
