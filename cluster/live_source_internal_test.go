package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// The instances of the live sources spread over the workers announced:
// each worker runs the instances over the workers, rounded down or up,
// whatever the sources' names and the order the workers are listed in,
// and every worker computes the same owners.
func TestFeedOwnerSpreadsInstances(t *testing.T) {
	for _, tc := range []struct {
		workers   int
		instances []int // per source
	}{
		{1, []int{2}}, {2, []int{2}}, {2, []int{1, 1}}, {2, []int{3}}, {3, []int{1, 1, 1}},
		{3, []int{2, 2}}, {3, []int{7}}, {5, []int{2}}, {2, []int{1, 1, 1, 1}},
	} {
		t.Run(fmt.Sprintf("%v-on-%d", tc.instances, tc.workers), func(t *testing.T) {
			var live, feeds []string
			for i := range tc.workers {
				live = append(live, fmt.Sprintf("w%d", i+1))
			}
			for s, n := range tc.instances {
				for i := range n {
					feeds = append(feeds, sourceKey(fmt.Sprintf("src%d", s), i))
				}
			}
			owners := map[string]string{}
			load := map[string]int{}
			for _, self := range live {
				w := &Worker{self: self, live: live, liveSources: feeds}
				for _, k := range feeds {
					owner := w.liveOwner(k)
					if prev, ok := owners[k]; ok {
						require.Equal(t, prev, owner, "every worker computes the same owner of %s", k)
						continue
					}
					owners[k] = owner
					load[owner]++
				}
			}
			lo, hi := len(feeds)/len(live), (len(feeds)+len(live)-1)/len(live)
			for _, w := range live {
				require.GreaterOrEqual(t, load[w], lo, "worker %s: %v", w, load)
				require.LessOrEqual(t, load[w], hi, "worker %s: %v", w, load)
			}
		})
	}
}

// acceptingEmitter takes every particle, as the engine does.
type acceptingEmitter struct{ topology.SourceEmitter }

func (acceptingEmitter) EmitTracked(particle.Particle, uint64) error { return nil }

// recordingSource records the outcomes the engine reports, and whether a
// hand-over's wait had ended when each came.
type recordingSource struct {
	settled  <-chan struct{}
	outcomes []string
}

func (r *recordingSource) Ack(id uint64) { r.record("ack", id) }
func (r *recordingSource) Fail(id uint64, _ acker.Reason, _ error) {
	r.record("fail", id)
}
func (r *recordingSource) Redeliver(uint64) (particle.Particle, error) {
	return particle.Particle{}, nil
}

func (r *recordingSource) record(what string, id uint64) {
	select {
	case <-r.settled:
		what += " after the wait ended"
	default:
	}
	r.outcomes = append(r.outcomes, fmt.Sprintf("%s %d", what, id))
}

// A hand-over waits for the particles its holding emitted to finish: the
// wait ends once the last was acknowledged or failed to its source, so
// that the source acknowledges its message to the broker before it
// disconnects.
func TestSettleWaitsForTheHoldingsParticles(t *testing.T) {
	f := &leasedLive{w: &Worker{cfg: Config{LeaseTTL: time.Hour, Logger: slog.New(slog.DiscardHandler)}},
		key: "source.sensors.0", pending: map[uint64]trackedParticle{}}
	settled := make(chan struct{})
	src := &recordingSource{settled: settled}
	h := &holding{ackr: src}
	e := &holdingEmitter{SourceEmitter: acceptingEmitter{}, f: f, h: h}
	require.NoError(t, e.EmitTracked(particle.Particle{}, 7))
	require.NoError(t, e.EmitTracked(particle.Particle{}, 8))
	go func() {
		defer close(settled)
		f.settle(context.Background(), h)
	}()
	f.Ack(1)
	select {
	case <-settled:
		t.Fatal("the wait ended with a particle pending")
	default:
	}
	f.Fail(2, acker.Failed, errors.New("dead-lettered"))
	<-settled
	require.Equal(t, []string{"ack 7", "fail 8"}, src.outcomes)
	f.settle(context.Background(), h) // nothing pending: returns at once
}
