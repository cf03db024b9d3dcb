package jetstreamedge

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// A position decodes to what was encoded; one written before positions
// held senders decodes with none; one cut within its senders is refused.
func TestPositionRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		delivered := rapid.Uint64().Draw(rt, "delivered")
		seqs := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 1<<40), 0, 20, rapid.ID[uint64]).Draw(rt, "seqs")
		senders := rapid.MapOfN(rapid.Uint64(), rapid.Uint64(), 0, 5).Draw(rt, "senders")
		sorted := append([]uint64(nil), seqs...)
		slices.Sort(sorted)
		b := encodePosition(delivered, sorted, senders)
		gotDelivered, gotSeqs, gotSenders, err := decodePosition(b)
		require.NoError(rt, err)
		require.Equal(rt, delivered, gotDelivered)
		require.Equal(rt, len(sorted), len(gotSeqs))
		for i := range sorted {
			require.Equal(rt, sorted[i], gotSeqs[i])
		}
		require.Len(rt, gotSenders, len(senders))
		for id, n := range senders {
			require.Equal(rt, n, gotSenders[id])
		}
		if len(senders) > 0 {
			_, _, _, err = decodePosition(b[:len(b)-1])
			require.ErrorIs(rt, err, errPosition)
		}
	})
	old := binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(nil, 7), 1), 42)
	delivered, seqs, senders, err := decodePosition(old)
	require.NoError(t, err)
	require.Equal(t, uint64(7), delivered)
	require.Equal(t, []uint64{42}, seqs)
	require.Empty(t, senders)
}
