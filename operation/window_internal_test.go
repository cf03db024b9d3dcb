package operation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/particle"
)

// countAgg counts a window's particles.
type countAgg struct{}

func (countAgg) New() int { return 0 }

func (countAgg) Add(n int, _ *particle.Particle) (int, error) { return n + 1, nil }

func (countAgg) Result(_ context.Context, w Window, _ string, n int, out Emitter) error {
	out.Emit(particle.Particle{Time: w.End, Measurement: "count", Fields: []particle.Field{{Key: "n", Value: particle.Int(int64(n))}}})
	return nil
}

// With checkpoints, Hold returns checkpointed anchors: a window of any
// kind keeps one, its newest input's, whatever the number of its inputs,
// and every anchor is let go of (acked) exactly once, none failed.
func TestWindowKeepsOneCheckpointedAnchorPerWindow(t *testing.T) {
	for _, b := range []Batcher{Tumbling(10 * time.Second), Sliding(10*time.Second, 2*time.Second), Session(3 * time.Second), Count(7)} {
		t.Run(b.String(), func(t *testing.T) {
			op := Aggregate(b, func(p *particle.Particle) string { v, _ := p.Tag("node"); return v }, countAgg{})
			out := &Collector{Checkpoints: true}
			ctx := context.Background()
			const n = 200
			for i := range n {
				p := particle.Particle{Time: int64(i) * 1e8, Measurement: "m", Tags: []particle.Tag{{Key: "node", Value: fmt.Sprint(i % 3)}},
					Fields: []particle.Field{{Key: "v", Value: particle.Float(float64(i))}}, Origin: 1, Seq: uint64(i + 1)}
				require.NoError(t, op.Process(ctx, p, out))
				require.LessOrEqual(t, len(op.refs), op.Open())
				for _, p := range op.panes {
					require.LessOrEqual(t, len(p.anchors), 1)
				}
				for _, p := range op.open {
					require.LessOrEqual(t, len(p.anchors), 1)
				}
				for a := range op.refs {
					require.True(t, a.Checkpointed())
				}
				if i%10 == 9 {
					require.NoError(t, op.OnWatermark(ctx, p.Time, out))
				}
			}
			require.NoError(t, op.Flush(ctx, out))
			require.NotEmpty(t, out.Emitted)
			require.Empty(t, out.Failed)
			require.Len(t, out.Acked, n)
			seen := map[Anchor]bool{}
			for _, a := range out.Acked {
				require.False(t, seen[a], "anchor %x acked twice", a)
				seen[a] = true
			}
			require.Zero(t, op.Open())
			require.Empty(t, op.refs)
		})
	}
}
