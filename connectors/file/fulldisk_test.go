package file_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// TestOpenSinkCutsTornLine opens files for append whose last line lacks
// its newline, as a write cut short leaves it: the torn line is cut off
// and logged, and complete lines are kept.
func TestOpenSinkCutsTornLine(t *testing.T) {
	for _, tc := range []struct {
		name, content, want, logged string
	}{
		{name: "empty", content: "", want: ""},
		{name: "complete", content: "m v=1 1\nm v=2 2\n", want: "m v=1 1\nm v=2 2\n"},
		{name: "torn last line", content: "m v=1 1\nm v=2 2\nm,src=pub id=5", want: "m v=1 1\nm v=2 2\n", logged: "bytes=14"},
		{name: "torn only line", content: "m v=1", want: "", logged: "bytes=5"},
		{name: "torn line longer than a chunk", content: "m v=1 1\n" + strings.Repeat("x", 100<<10), want: "m v=1 1\n", logged: fmt.Sprint("bytes=", 100<<10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.lp")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			var log bytes.Buffer
			s, err := file.OpenSink(path, file.SinkConfig{Append: true, Precision: particle.Second, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			require.NoError(t, err)
			e := newEmitter()
			require.NoError(t, e.process(t, s, 3))
			require.NoError(t, s.Flush(context.Background(), e))
			require.NoError(t, s.Close())
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.want+line(t, reading(3)), string(b))
			if tc.logged == "" {
				assert.Empty(t, log.String())
				return
			}
			assert.Contains(t, log.String(), "cut off a torn last line")
			assert.Contains(t, log.String(), tc.logged)
		})
	}
}

// mountSmall mounts a tmpfs of size bytes on a new directory, unmounted
// when t ends. Mounting needs root: the test is skipped without, and
// fails if mounting fails as root.
func mountSmall(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprint("size=", size), "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount a %d-byte tmpfs on %s as root: %s", size, dir, out)
	t.Cleanup(func() {
		out, err := exec.Command("umount", dir).CombinedOutput()
		assert.NoError(t, err, "umount %s: %s", dir, out)
	})
	return dir
}

// signalingHandler is a slog handler that keeps the records and closes
// seen once a record's message starts with want.
type signalingHandler struct {
	want string
	seen chan struct{}
	once sync.Once
	mu   sync.Mutex
	msgs []string
}

func (h *signalingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *signalingHandler) WithGroup(string) slog.Handler            { return h }
func (h *signalingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.msgs = append(h.msgs, r.Level.String()+" "+r.Message)
	h.mu.Unlock()
	if strings.HasPrefix(r.Message, h.want) {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

// TestSinkFullDisk writes to a file on a full tmpfs through a topology:
// the failure is logged loudly at once; stopping while the disk is full
// ends with an error that names the failing destination and the lines
// left unwritten, none acknowledged. The write cut short leaves a torn
// line; once there is room, opening the file for append cuts it off, and
// every line of the file is whole.
func TestSinkFullDisk(t *testing.T) {
	dir := mountSmall(t, 256<<10)
	path := filepath.Join(dir, "out.lp")
	sink, err := file.OpenSink(path, file.SinkConfig{Append: true, BufferSize: 4 << 10})
	require.NoError(t, err)
	logs := &signalingHandler{want: "destination failing", seen: make(chan struct{})}
	topo, err := topology.New(topology.Config{
		Logger:       slog.New(logs),
		Acking:       topology.AckingConfig{Enabled: true},
		DrainTimeout: 200 * time.Millisecond,
		Destination:  topology.DestinationConfig{InitialInterval: time.Millisecond, MaxInterval: 10 * time.Millisecond},
	})
	require.NoError(t, err)
	var acked, emitted int
	var mu sync.Mutex
	topo.AddSource("gen", topology.Single(topology.Retaining(func(ctx context.Context, out topology.SourceEmitter) error {
		// Until the topology stops: the disk fills on the way.
		for i := 0; ctx.Err() == nil; i++ {
			p := particle.Particle{Time: int64(i) * 1e6, Measurement: "m", Tags: []particle.Tag{{Key: "src", Value: "pub"}},
				Fields: []particle.Field{{Key: "id", Value: particle.Int(int64(i))}}}
			if err := out.EmitTracked(p, uint64(i)); err != nil {
				return err
			}
			mu.Lock()
			emitted++
			mu.Unlock()
		}
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(sink), topology.BoltConfig{}).Input("gen", topology.Global())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- topo.Run(ctx) }()
	<-logs.seen
	cancel()
	err = <-done
	acked = int(topo.Stats("gen").Acked.Load())

	require.ErrorIs(t, err, topology.ErrDrainTimeout)
	require.ErrorIs(t, err, syscall.ENOSPC)
	assert.ErrorContains(t, err, "bolt out[0]: destination failing for ")
	m := regexp.MustCompile(`close: file: write \S+: (\d+) lines left unwritten, their inputs not acknowledged: no space left on device`).FindStringSubmatch(err.Error())
	require.NotNil(t, m, "Close says what is left: %v", err)
	unwritten, _ := strconv.Atoi(m[1])
	assert.Positive(t, unwritten)
	assert.Contains(t, logs.msgs, "ERROR destination failing: retrying", "loud at the first failure")

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	whole := bytes.Count(b, []byte{'\n'})
	assert.LessOrEqual(t, acked, whole, "only what was written is acknowledged")
	require.NotEqual(t, byte('\n'), b[len(b)-1], "the full disk cut a line short (else pick another line length)")

	out, err := exec.Command("mount", "-o", "remount,size=1m", dir).CombinedOutput()
	require.NoError(t, err, "remount: %s", out)
	var log bytes.Buffer
	again, err := file.OpenSink(path, file.SinkConfig{Append: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	require.NoError(t, again.Close())
	assert.Contains(t, log.String(), "cut off a torn last line")
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, byte('\n'), b[len(b)-1])
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		require.Regexp(t, `^m,src=pub id=\d+i \d+$`, l, "line %d", i+1)
	}
	t.Logf("%d emitted, %d acknowledged, %d lines whole, %d left unwritten", emitted, acked, whole, unwritten)
}
