package replay_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/replay"
)

// A record stamped far ahead of the newest one replayed is a wild
// timestamp when the next record falls back: rejected as invalid, never
// waited for, never the new high-water mark. A jump that the next record
// confirms is a gap in the recording, replayed as it is. The decision is
// the recording's, so it is the same at every speed.
func TestWildTimestamps(t *testing.T) {
	const s = int64(time.Second)
	t0 := int64(1_700_000_000) * s
	twoDays := int64(48 * time.Hour)
	cases := []struct {
		name       string
		times      []int64
		want       []int64
		wantReject int
	}{
		{"wild in the middle", []int64{t0, t0 + s, t0 + twoDays, t0 + 2*s}, []int64{t0, t0 + s, t0 + 2*s}, 1},
		{"wild at the end", []int64{t0, t0 + s, t0 + twoDays}, []int64{t0, t0 + s}, 1},
		{"two wild ones apart", []int64{t0, t0 + twoDays, t0 + s, t0 + twoDays + s, t0 + 2*s}, []int64{t0, t0 + s, t0 + 2*s}, 2},
		{"a gap", []int64{t0, t0 + s, t0 + twoDays, t0 + twoDays + s}, []int64{t0, t0 + s, t0 + twoDays, t0 + twoDays + s}, 0},
		{"within the bound", []int64{t0, t0 + int64(30*time.Minute), t0 + s}, []int64{t0, t0 + int64(30*time.Minute), t0 + s}, 0},
	}
	for _, tc := range cases {
		for _, speed := range []replay.Speed{replay.Max, 1, 1000} {
			t.Run(tc.name+"/"+speed.String(), func(t *testing.T) {
				path := writeLP(t, t.TempDir(), "w.lp", tc.times)
				w := newFakeWall()
				r := &recorder{wall: w}
				src := run(t, replay.Config{Inputs: inputs(path), Speed: speed, Wall: w}, r)
				assert.Equal(t, tc.want, r.times)
				require.Len(t, r.rejects, tc.wantReject)
				for _, err := range r.rejects {
					assert.ErrorIs(t, err, replay.ErrWildTimestamp)
				}
				assert.Equal(t, uint64(tc.wantReject), src.Status().Invalid)
				if speed != replay.Max {
					// The fake wall starts where the replay anchors.
					paced := time.Duration(float64(slices.Max(tc.want)-t0) / float64(speed))
					assert.LessOrEqual(t, w.Now().Sub(time.Unix(1_000_000, 0)), paced+time.Second, "a paced replay never waits for a wild record")
				}
			})
		}
	}
}
