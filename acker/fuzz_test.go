package acker

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzTable runs op sequences against a table and a map holding the
// expected value of each pending tree: no panic, and every result agrees.
func FuzzTable(f *testing.F) {
	f.Add(uint8(3), []byte{0, 1, 0, 2, 1, 0, 3, 200, 4, 0, 5, 7})
	f.Add(uint8(0), []byte{0, 9, 0, 9, 2, 1, 0, 0, 1, 1, 3, 255, 3, 255, 4, 1})
	f.Add(uint8(63), []byte{0, 5, 0, 6, 0, 7, 11, 0, 1, 2, 9, 130, 4, 0, 8, 1})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		tab, err := NewTable(Config{Capacity: int(capacity%64) + 1, ProgressTimeout: 1000, HardTimeout: 5000})
		require.NoError(t, err)
		live := map[RootID]uint64{}
		var issued []RootID
		var now, pnow int64
		for ; len(ops) >= 2; ops = ops[2:] {
			op, arg := ops[0], ops[1]
			var target RootID
			if len(issued) > 0 {
				target = issued[int(arg)%len(issued)]
			}
			switch op % 6 {
			case 0:
				xor := uint64(arg) * 0x9e3779b97f4a7c15
				id, done, err := tab.Init(now, xor)
				switch {
				case xor == 0:
					require.True(t, done)
					require.NoError(t, err)
				case len(live) == tab.Cap():
					require.ErrorIs(t, err, ErrFull)
				default:
					require.NoError(t, err)
					_, dup := live[id]
					require.False(t, dup)
					live[id] = xor
					issued = append(issued, id)
				}
			case 1: // ack: the whole value if op has bit 3, else junk
				xor := uint64(arg) << 7
				if op&8 != 0 {
					xor = live[target]
				}
				done, ok := tab.Update(now, target, xor)
				want, pending := live[target]
				require.Equal(t, pending, ok)
				require.Equal(t, pending && want == xor, done)
				switch {
				case done:
					delete(live, target)
				case pending:
					live[target] = want ^ xor
				}
			case 2:
				_, pending := live[target]
				require.Equal(t, pending, tab.Fail(target))
				delete(live, target)
			case 3:
				now += int64(arg) * 8
				if op&8 == 0 {
					pnow += int64(arg) * 8
				}
			case 4:
				tab.Expire(now, pnow, func(id RootID, r Reason) {
					_, pending := live[id]
					require.True(t, pending)
					require.Contains(t, []Reason{Timeout, Expired}, r)
					delete(live, id)
				})
			case 5: // forged id
				id := RootID(uint64(arg)<<32 | uint64(op>>3))
				_, pending := live[id]
				_, ok := tab.Update(now, id, 0)
				require.Equal(t, pending, ok)
			}
			require.Equal(t, len(live), tab.Len())
			require.NoError(t, checkTable(tab))
		}
	})
}
