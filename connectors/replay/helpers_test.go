package replay_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeWall is a wall clock that moves only when the source waits: At asks
// arm what to do, and unless arm says no, moves the clock to the timer's
// time plus a lateness and fires it at once. A timer that is not fired
// never fires: the source must be woken by a change.
type fakeWall struct {
	*streamclock.Fake
	// arm is called with the timer's time; it returns how late the timer
	// fires, or false to leave it armed for good.
	arm  func(t time.Time) (late time.Duration, fire bool)
	arms int
}

func newFakeWall() *fakeWall {
	return &fakeWall{
		Fake: streamclock.NewFake(time.Unix(1_000_000, 0)),
		arm:  func(time.Time) (time.Duration, bool) { return 0, true },
	}
}

func (w *fakeWall) At(t time.Time) (<-chan time.Time, func()) {
	w.arms++
	c := make(chan time.Time, 1)
	late, fire := w.arm(t)
	if fire {
		if d := t.Add(late).Sub(w.Now()); d > 0 {
			w.Advance(d)
		}
		c <- w.Now()
	}
	return c, func() {}
}

// recorder is a topology.SourceEmitter that records when each particle
// was emitted on a wall clock.
type recorder struct {
	wall streamclock.Wall

	mu      sync.Mutex
	times   []int64     // event time of each data particle
	files   []string    // its file tag
	at      []time.Time // wall time of its emission
	metas   []metaparticle.SpeedChange
	metaAt  []int64 // event time of each meta
	metaIdx []int   // data particles emitted before each meta
	rejects []error
	raws    []string // the raw text of each reject
	flushes int
	onMeta  chan metaparticle.SpeedChange // if not nil, told of each meta
	discard bool                          // count only
	// stop is called once stopAfter particles were emitted
	stopAfter int
	stop      func()
	n         int
}

func (r *recorder) EmitTracked(p particle.Particle, _ uint64) error { return r.Emit(p) }

func (r *recorder) Emit(p particle.Particle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.discard {
		return nil
	}
	r.times = append(r.times, p.Time)
	r.at = append(r.at, r.wall.Now())
	f, _ := p.Tag("file")
	r.files = append(r.files, f)
	if r.stopAfter > 0 && len(r.times) == r.stopAfter {
		r.stop()
	}
	return nil
}

func (r *recorder) EmitMeta(t int64, m particle.Meta) error {
	r.mu.Lock()
	sc := m.(metaparticle.SpeedChange)
	r.metas = append(r.metas, sc)
	r.metaAt = append(r.metaAt, t)
	r.metaIdx = append(r.metaIdx, r.n)
	r.mu.Unlock()
	if r.onMeta != nil {
		r.onMeta <- sc
	}
	return nil
}

func (r *recorder) Reject(err error, raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejects = append(r.rejects, err)
	r.raws = append(r.raws, string(raw))
}

func (r *recorder) Skip(uint64) {}

func (r *recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes++
	return nil
}

// writeLP writes a line-protocol file of one particle per event time.
func writeLP(t require.TestingT, dir, name string, times []int64) string {
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	for i, ts := range times {
		fmt.Fprintf(w, "m,file=%s i=%di %d\n", name, i, ts)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path
}

// regular returns n event times starting at start, step apart.
func regular(n int, start int64, step time.Duration) []int64 {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = start + int64(i)*int64(step)
	}
	return ts
}
