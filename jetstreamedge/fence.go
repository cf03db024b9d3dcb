package jetstreamedge

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// ErrFenced is what Send returns while the transport is fenced (see
// Transport.Fence): the batch was not published. It wraps
// edge.ErrReleased: the instance that sent it is being handed over.
var ErrFenced = fmt.Errorf("jetstreamedge: worker fenced off, publishing nothing: %w", edge.ErrReleased)

// fence tells whether the transport is fenced, and wakes what waits for
// the fence to rise or to lift. The zero fence is down.
type fence struct {
	mu     sync.Mutex
	fenced bool
	// raised is closed when the fence rises, lifted when it lifts; each
	// is replaced once used, and made when first asked for.
	raised, lifted chan struct{}
	// asked is when Unfence was first refused since the fence rose.
	asked time.Time
}

// init makes the channels. f.mu is held.
func (f *fence) init() {
	if f.raised == nil {
		f.raised, f.lifted = make(chan struct{}), make(chan struct{})
	}
}

// set raises or lifts the fence and reports whether that changed it.
func (f *fence) set(fenced bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.init()
	if f.fenced == fenced {
		return false
	}
	f.fenced, f.asked = fenced, time.Time{}
	if fenced {
		close(f.raised)
		f.raised = make(chan struct{})
	} else {
		close(f.lifted)
		f.lifted = make(chan struct{})
	}
	return true
}

// state returns whether the fence is up, and the channel closed when that
// changes.
func (f *fence) state() (fenced bool, changed <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.init()
	if f.fenced {
		return true, f.lifted
	}
	return false, f.raised
}

// up reports whether the fence is up.
func (f *fence) up() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fenced
}

// Fence fences the worker off, as a worker does that may have been taken
// for gone (its lease about to expire out of its reach): from now on the
// transport publishes nothing and settles nothing, so that nothing this
// worker derives from here on reaches the stream, even through buffers
// that a connection restored flushes. Send refuses new batches with
// ErrFenced, and stops waiting for the ones before; publishes tried again
// wait for Unfence (what they carry was derived before the fence:
// receivers drop the copies); no message is acknowledged, given back or
// kept alive, so that the server delivers
// the messages in progress here again, an ack wait later, to the unit's
// next holder. Every inlet hands its unit over, as when Config.Owns
// stopped owning it, so that the instances start afresh without what they
// held, and none pulls until Unfence.
func (t *Transport) Fence() {
	if t.fence.set(true) {
		t.cfg.Logger.Warn("fenced off: publishing and acknowledging nothing, handing the units over")
		t.Reassign()
	}
}

// Unfence lifts the fence, and reports whether it is down: the worker is
// back, and its inlets pull again for the units it owns, which start
// afresh. It stays up while an instance that ran when it rose has not
// started afresh yet (its inlet's Run not called again): until then the
// instance may still hand on what it derived while fenced (windows its
// idle inputs fired), which Send would publish once the fence is down.
// An instance that ended meanwhile is not started again: an ack wait
// after the first call that found one, the fence lifts all the same.
func (t *Transport) Unfence() bool {
	if n := t.restarting.Load(); n > 0 {
		now := time.Now()
		t.fence.mu.Lock()
		if t.fence.asked.IsZero() {
			t.fence.asked = now
		}
		asked := t.fence.asked
		t.fence.mu.Unlock()
		if now.Sub(asked) < t.cfg.AckWait {
			t.cfg.Logger.Debug("fence kept up: instances not started afresh yet", "instances", n)
			return false
		}
		t.cfg.Logger.Warn("lifting the fence with instances not started afresh: ended, or stuck", "instances", n)
		t.mu.Lock()
		for _, in := range t.inlets {
			if in.fenced.Swap(false) {
				t.restarting.Add(-1)
			}
		}
		t.mu.Unlock()
	}
	if t.fence.set(false) {
		t.cfg.Logger.Info("fence lifted")
		t.Reassign()
	}
	return true
}

// Fenced reports whether the transport is fenced (Fence), and returns a
// channel closed when that changes.
func (t *Transport) Fenced() (fenced bool, changed <-chan struct{}) { return t.fence.state() }

// AwaitUnfenced returns once the transport is not fenced off, or ctx
// ended.
func (t *Transport) AwaitUnfenced(ctx context.Context) {
	for {
		fenced, lifted := t.fence.state()
		if !fenced {
			return
		}
		select {
		case <-lifted:
		case <-ctx.Done():
			return
		}
	}
}
