package file_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
)

func TestSinkConformance(t *testing.T) {
	connectortest.TestSink(t, connectortest.Features{}, func(t *testing.T) connectortest.SinkHarness {
		return &sinkHarness{path: filepath.Join(t.TempDir(), "out.lp")}
	})
}

// sinkHarness runs a Sink on a file whose writes fail, as on a full disk,
// while it is broken.
type sinkHarness struct {
	path   string
	broken atomic.Bool
	f      *os.File
}

func (h *sinkHarness) NewSink(t testing.TB) operation.Operation {
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s, err := file.NewSinkConfig(&fullDisk{f: f, broken: &h.broken}, file.SinkConfig{Fsync: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (h *sinkHarness) Read(t testing.TB) []int {
	b, err := os.ReadFile(h.path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return connectortest.NumbersIn(b)
}

func (h *sinkHarness) Break(testing.TB) { h.broken.Store(true) }
func (h *sinkHarness) Mend(testing.TB)  { h.broken.Store(false) }

// fullDisk writes to f, or fails with ENOSPC while broken.
type fullDisk struct {
	f      *os.File
	broken *atomic.Bool
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if d.broken.Load() {
		return 0, syscall.ENOSPC
	}
	return d.f.Write(p)
}

func (d *fullDisk) Sync() error { return d.f.Sync() }
