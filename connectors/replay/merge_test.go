package replay_test

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/particle"
)

func inputs(paths ...string) []replay.Input {
	in := make([]replay.Input, len(paths))
	for i, p := range paths {
		in[i] = replay.Input{Path: p}
	}
	return in
}

// TestMergeInterleaved checks against a sort that interleaved files come
// out in event-time order, ties in the order of the files.
func TestMergeInterleaved(t *testing.T) {
	dir := t.TempDir()
	iter := 0
	rapid.Check(t, func(t *rapid.T) {
		iter++
		k := rapid.IntRange(1, 5).Draw(t, "files")
		type rec struct {
			ts   int64
			file string
			i    int
		}
		var all []rec
		var paths []string
		for f := range k {
			times := rapid.SliceOfN(rapid.Int64Range(t0, t0+int64(time.Minute)), 0, 50).Draw(t, "times")
			slices.Sort(times)
			name := fmt.Sprintf("%d-%d.lp", iter, f)
			paths = append(paths, writeLP(t, dir, name, times))
			for i, ts := range times {
				all = append(all, rec{ts, name, i})
			}
		}
		// The reference: a stable sort of the files' concatenation.
		slices.SortStableFunc(all, func(a, b rec) int { return cmp.Compare(a.ts, b.ts) })
		w := newFakeWall()
		r := &recorder{wall: w}
		src, err := replay.New(replay.Config{Inputs: inputs(paths...), Speed: replay.Max, Wall: w})
		require.NoError(t, err)
		require.NoError(t, src.Run(context.Background(), r))
		require.Len(t, r.times, len(all))
		for i, want := range all {
			require.Equal(t, want.ts, r.times[i], "particle %d", i)
			require.Equal(t, want.file, r.files[i], "particle %d", i)
		}
	})
}

// TestConcat checks that Concat keeps the files' order, event time or not.
func TestConcat(t *testing.T) {
	dir := t.TempDir()
	later := writeLP(t, dir, "later.lp", regular(3, t0+int64(time.Hour), time.Second))
	earlier := writeLP(t, dir, "earlier.lp", regular(2, t0, time.Second))
	w := newFakeWall()
	r := &recorder{wall: w}
	run(t, replay.Config{Inputs: inputs(later, earlier), Speed: replay.Max, Concat: true, Wall: w}, r)
	assert.Equal(t, []string{"later.lp", "later.lp", "later.lp", "earlier.lp", "earlier.lp"}, r.files)
}

// TestReaderInput checks that an input read from an io.Reader, such as
// standard input, replays like a file, and cannot loop.
func TestReaderInput(t *testing.T) {
	w := newFakeWall()
	r := &recorder{wall: w}
	in := replay.Input{Path: "-", Reader: strings.NewReader("m,file=stdin i=1i 5\nbad\nm,file=stdin i=2i 6\n")}
	run(t, replay.Config{Inputs: []replay.Input{in}, Speed: replay.Max, Wall: w}, r)
	assert.Equal(t, []int64{5, 6}, r.times)
	assert.Equal(t, []string{"bad"}, r.raws)
	_, err := replay.New(replay.Config{Inputs: []replay.Input{in}, Loop: true})
	assert.ErrorIs(t, err, replay.ErrInvalidConfig)
}

// TestPipeInputKeepsUp replays from a pipe whose writer writes the next
// line only once the one before was emitted: each line must be decoded
// and emitted as it comes, not once a block is full.
func TestPipeInputKeepsUp(t *testing.T) {
	pr, pw := io.Pipe()
	w := newFakeWall()
	out := &signalling{recorder: recorder{wall: w}, emitted: make(chan struct{})}
	src, err := replay.New(replay.Config{Inputs: []replay.Input{{Path: "-", Reader: pr}}, Speed: replay.Max, Wall: w})
	require.NoError(t, err)
	done := make(chan error)
	go func() { done <- src.Run(context.Background(), out) }()
	for i := range 100 {
		_, err := fmt.Fprintf(pw, "m,file=pipe i=%di %d\n", i, t0+int64(i))
		require.NoError(t, err)
		<-out.emitted
	}
	require.NoError(t, pw.Close())
	require.NoError(t, <-done)
	assert.Equal(t, regular(100, t0, 1), out.times)
}

// signalling is a recorder that tells of each particle emitted.
type signalling struct {
	recorder
	emitted chan struct{}
}

func (s *signalling) Emit(p particle.Particle) error {
	err := s.recorder.Emit(p)
	s.emitted <- struct{}{}
	return err
}

// TestGzipInput replays a gzip file, then the same file cut in the
// middle: the lines before the cut are emitted, and Run fails with a read
// error naming the file and the line where it broke off.
func TestGzipInput(t *testing.T) {
	const n = 20_000
	dir := t.TempDir()
	var text, z bytes.Buffer
	for i := range n {
		fmt.Fprintf(&text, "m,file=gz i=%di %d\n", i, t0+int64(i)*1e9)
	}
	zw := gzip.NewWriter(&z)
	_, err := zw.Write(text.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	path := filepath.Join(dir, "a.lp.gz")
	require.NoError(t, os.WriteFile(path, z.Bytes(), 0o644))
	w := newFakeWall()
	r := &recorder{wall: w}
	src := run(t, replay.Config{Inputs: inputs(path), Speed: replay.Max, Wall: w}, r)
	assert.Equal(t, regular(n, t0, time.Second), r.times)
	assert.Equal(t, int64(z.Len()), src.Status().BytesRead)

	cut := filepath.Join(dir, "cut.lp.gz")
	require.NoError(t, os.WriteFile(cut, z.Bytes()[:z.Len()/2], 0o644))
	r = &recorder{wall: w}
	src, err = replay.New(replay.Config{Inputs: inputs(cut), Speed: replay.Max, Wall: w})
	require.NoError(t, err)
	err = src.Run(context.Background(), r)
	var re *file.ReadError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, cut, re.Source)
	assert.Greater(t, len(r.times), 0)
	assert.Equal(t, len(r.times)+1, re.Line, "the line after the last emitted broke off")
	assert.Equal(t, regular(len(r.times), t0, time.Second), r.times)
}

// TestRange checks that From and To bound the replay to [From, To) and
// that the records outside are read and counted.
func TestRange(t *testing.T) {
	times := regular(10, t0, time.Second)
	path := writeLP(t, t.TempDir(), "a.lp", times)
	w := newFakeWall()
	r := &recorder{wall: w}
	src := run(t, replay.Config{
		Inputs: inputs(path), Speed: 5, Wall: w,
		From: time.Unix(0, times[2]), To: time.Unix(0, times[7]),
	}, r)
	assert.Equal(t, times[2:7], r.times)
	assert.Equal(t, schedule(r.at[0], times[2:7], 5), r.at, "the replay starts at From without waiting")
	st := src.Status()
	assert.Equal(t, uint64(10), st.Read)
	assert.Equal(t, uint64(5), st.Emitted)
	assert.Equal(t, uint64(5), st.Outside)
}

// TestLoop checks that every pass moves event time forward by the span
// plus the first gap, so that it keeps increasing.
func TestLoop(t *testing.T) {
	times := []int64{t0, t0 + 2e9, t0 + 3e9, t0 + 10e9}
	path := writeLP(t, t.TempDir(), "a.lp", times)
	w := newFakeWall()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &recorder{wall: w, stopAfter: 10, stop: cancel}
	src, err := replay.New(replay.Config{Inputs: inputs(path), Speed: replay.Max, Loop: true, Wall: w})
	require.NoError(t, err)
	require.NoError(t, src.Run(ctx, r))
	shift := int64(12e9) // span 10 s + first gap 2 s
	want := slices.Concat(times, add(times, shift), add(times[:2], 2*shift))
	assert.Equal(t, want, r.times)
	assert.Equal(t, 2, src.Status().Pass)
	assert.ErrorIs(t, src.Run(ctx, r), replay.ErrRan)
}

func add(ts []int64, d int64) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t + d
	}
	return out
}

// TestCancelMidway cancels a replay of files longer than what is read
// ahead of the merge: Run returns, its decoding goroutines end (TestMain
// checks for leaks), and what was emitted is the start of the merge.
func TestCancelMidway(t *testing.T) {
	dir := t.TempDir()
	a := writeLP(t, dir, "a.lp", regular(10_000, t0, 2*time.Second))
	b := writeLP(t, dir, "b.lp", regular(10_000, t0+int64(time.Second), 2*time.Second))
	w := newFakeWall()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &recorder{wall: w, stopAfter: 1000, stop: cancel}
	src, err := replay.New(replay.Config{Inputs: inputs(a, b), Speed: replay.Max, Wall: w})
	require.NoError(t, err)
	require.NoError(t, src.Run(ctx, r))
	require.Len(t, r.times, 1000)
	assert.Equal(t, regular(1000, t0, time.Second), r.times)
	assert.Equal(t, uint64(1000), src.Status().Emitted)
}

// TestMalformedLines checks that bad records are rejected with their
// file and line, counted and skipped, and the replay goes on.
func TestMalformedLines(t *testing.T) {
	dir := t.TempDir()
	lp := filepath.Join(dir, "a.lp")
	require.NoError(t, os.WriteFile(lp, []byte("m v=1 1000000000\nm v= 2000000000\nm v=3 3000000000\nnot line protocol\n"), 0o644))
	csv := filepath.Join(dir, "b.csv")
	require.NoError(t, os.WriteFile(csv, []byte("time,v\n1.5,1\nsoon,2\n2.5,x\n"), 0o644))
	w := newFakeWall()
	r := &recorder{wall: w}
	src := run(t, replay.Config{Inputs: inputs(lp, csv), Speed: replay.Max, Wall: w}, r)
	assert.Equal(t, []int64{1e9, 1.5e9, 2.5e9, 3e9}, r.times)
	var msgs []string
	for _, e := range r.rejects {
		var de *particle.DecodeError
		require.ErrorAs(t, e, &de)
		msgs = append(msgs, fmt.Sprintf("%s:%d", filepath.Base(de.Source), de.Line))
	}
	slices.Sort(msgs)
	assert.Equal(t, []string{"a.lp:2", "a.lp:4", "b.csv:3"}, msgs)
	raws := slices.Clone(r.raws)
	slices.Sort(raws)
	assert.Equal(t, []string{"m v= 2000000000", "not line protocol", "soon,2"}, raws, "malformed records come with their text")
	st := src.Status()
	assert.Equal(t, uint64(7), st.Read)
	assert.Equal(t, uint64(4), st.Emitted)
	assert.Equal(t, uint64(3), st.Invalid)
}

// TestMemoryFlat merges two interleaved files of 50 MB each and checks
// that the heap stays far below their size: they stream, a few hundred
// records each at a time. Under the race detector the files are a tenth as large.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB")
	}
	size := 50 << 20
	if raceEnabled {
		size /= 10
	}
	dir := t.TempDir()
	var paths []string
	pad := strings.Repeat("x", 150)
	for f := range 2 {
		path := filepath.Join(dir, fmt.Sprintf("%d.lp", f))
		fh, err := os.Create(path)
		require.NoError(t, err)
		w := bufio.NewWriter(fh)
		written := 0
		for i := 0; written < size; i++ {
			n, _ := fmt.Fprintf(w, "m,node=n%d pad=%q,i=%di %d\n", f, pad, i, t0+int64(2*i+f)*1e6)
			written += n
		}
		require.NoError(t, w.Flush())
		require.NoError(t, fh.Close())
		paths = append(paths, path)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	sample := &memSampler{every: 50_000, sample: func() {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}}
	src, err := replay.New(replay.Config{Inputs: inputs(paths...), Speed: replay.Max, Wall: newFakeWall()})
	require.NoError(t, err)
	require.NoError(t, src.Run(context.Background(), sample))
	st := src.Status()
	require.Equal(t, st.Read, st.Emitted)
	require.Equal(t, st.BytesTotal, st.BytesRead)
	t.Logf("%d particles from %d MB: heap in use %d MB at the start, %d MB at the peak",
		st.Emitted, st.BytesTotal>>20, base>>20, peak>>20)
	assert.Less(t, peak-min(peak, base), uint64(32<<20), "heap growth")
	assert.True(t, sample.ordered, "merged in event-time order")
}

// memSampler is a topology.SourceEmitter that checks the order of the
// particles and calls sample every so many.
type memSampler struct {
	every   int
	sample  func()
	n       int
	last    int64
	ordered bool
}

func (m *memSampler) EmitTracked(p particle.Particle, _ uint64) error { return m.Emit(p) }

func (m *memSampler) Emit(p particle.Particle) error {
	if m.n == 0 {
		m.ordered = true
	} else if p.Time < m.last {
		m.ordered = false
	}
	m.last = p.Time
	m.n++
	if m.n%m.every == 0 {
		m.sample()
	}
	return nil
}

func (m *memSampler) EmitMeta(int64, particle.Meta) error { return nil }
func (m *memSampler) Reject(error, []byte)                {}
func (m *memSampler) Skip(uint64)                         {}
func (m *memSampler) Flush() error                        { return nil }

// TestStatusSpan checks that Status gives the event-time span of the
// replay, scanned from the ends of the files and bounded by From and To,
// so that progress follows the replay, not the read-ahead.
func TestStatusSpan(t *testing.T) {
	dir := t.TempDir()
	a := writeLP(t, dir, "a.lp", regular(100, t0, time.Second))
	b := writeLP(t, dir, "b.lp", regular(100, t0+int64(30*time.Second), time.Second))
	w := newFakeWall()
	src := run(t, replay.Config{Inputs: inputs(a, b), Speed: replay.Max, Wall: w}, &recorder{wall: w})
	st := src.Status()
	assert.Equal(t, time.Unix(0, t0).UTC(), st.First)
	assert.Equal(t, time.Unix(0, t0+int64(129*time.Second)).UTC(), st.Last)
	assert.Equal(t, st.Last, st.Position)

	from, to := time.Unix(0, t0+int64(10*time.Second)), time.Unix(0, t0+int64(20*time.Second))
	src = run(t, replay.Config{Inputs: inputs(a), Speed: replay.Max, From: from, To: to, Wall: w}, &recorder{wall: w})
	st = src.Status()
	assert.Equal(t, from.UTC(), st.First)
	assert.Equal(t, to.UTC(), st.Last)

	src = run(t, replay.Config{Inputs: []replay.Input{{Path: "-", Reader: strings.NewReader("m v=1 1\n")}}, Speed: replay.Max, Wall: w}, &recorder{wall: w})
	assert.True(t, src.Status().First.IsZero(), "standard input has no span before it is read")
}
