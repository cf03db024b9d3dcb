package state_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

func fieldValueGen() *rapid.Generator[particle.Value] {
	return rapid.Custom(func(t *rapid.T) particle.Value {
		switch rapid.IntRange(0, 5).Draw(t, "kind") {
		case 0:
			return particle.Float(math.Float64frombits(rapid.Uint64().Draw(t, "f")))
		case 1:
			return particle.Int(rapid.Int64().Draw(t, "i"))
		case 2:
			return particle.Uint(rapid.Uint64().Draw(t, "u"))
		case 3:
			return particle.String(rapid.String().Draw(t, "s"))
		case 4:
			return particle.Bool(rapid.Bool().Draw(t, "b"))
		}
		return particle.Value{}
	})
}

// Tags, fields of every kind and counts read back as written; none read
// back as nil.
func TestParticlePartsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tags := rapid.SliceOf(rapid.Custom(func(t *rapid.T) particle.Tag {
			return particle.Tag{Key: rapid.String().Draw(t, "key"), Value: rapid.String().Draw(t, "value")}
		})).Draw(t, "tags")
		fields := rapid.SliceOf(rapid.Custom(func(t *rapid.T) particle.Field {
			return particle.Field{Key: rapid.String().Draw(t, "key"), Value: fieldValueGen().Draw(t, "value")}
		})).Draw(t, "fields")
		count := rapid.IntRange(0, math.MaxInt).Draw(t, "count")
		var w state.Writer
		w.PutTags(tags)
		w.PutFields(fields)
		w.PutCount(count)
		r := state.NewReader(w.Bytes())
		gotTags, gotFields, gotCount := r.ReadTags(), r.ReadFields(), r.ReadCount()
		require.NoError(t, r.Err())
		require.Zero(t, r.Len())
		if len(tags) == 0 {
			require.Nil(t, gotTags)
		} else {
			require.Equal(t, tags, gotTags)
		}
		require.Len(t, gotFields, len(fields))
		for i, f := range fields {
			require.Equal(t, f.Key, gotFields[i].Key)
			require.Equal(t, f.Value.Kind(), gotFields[i].Value.Kind())
			require.Equal(t, f.Value.String(), gotFields[i].Value.String())
		}
		require.Equal(t, count, gotCount)
	})
}

// A value of an unknown kind and a count beyond int are malformed, at
// their offsets.
func TestParticlePartsMalformed(t *testing.T) {
	var w state.Writer
	w.PutLen(1)
	w.PutString("v")
	w.PutUvarint(99) // no such kind
	r := state.NewReader(w.Bytes())
	r.ReadFields()
	var de *state.DecodeError
	require.ErrorAs(t, r.Err(), &de)
	require.ErrorIs(t, r.Err(), state.ErrMalformed)

	w.Reset()
	w.PutUvarint(math.MaxUint64)
	r = state.NewReader(w.Bytes())
	require.Zero(t, r.ReadCount())
	require.ErrorAs(t, r.Err(), &de)
	require.True(t, errors.Is(de, state.ErrMalformed))
	require.Zero(t, de.Offset)
}

// A map reads back as written, its keys in order whatever the map's
// iteration order; keys out of order are malformed.
func TestMapRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOf(rapid.String(), rapid.Int64()).Draw(t, "m")
		var w, again state.Writer
		state.PutMap(&w, m, w.PutVarint)
		state.PutMap(&again, m, again.PutVarint)
		require.Equal(t, w.Bytes(), again.Bytes())
		r := state.NewReader(w.Bytes())
		var got map[string]int64
		state.ReadMap(r, &got, func(string) int64 { return r.ReadVarint() })
		require.NoError(t, r.Err())
		require.Zero(t, r.Len())
		require.Equal(t, len(m), len(got))
		for k, v := range m {
			require.Equal(t, v, got[k], "key %q", k)
		}
	})
}

func TestMapKeysOutOfOrderAreMalformed(t *testing.T) {
	for _, keys := range [][]string{{"b", "a"}, {"a", "a"}} {
		var w state.Writer
		w.PutLen(len(keys))
		for _, k := range keys {
			w.PutString(k)
			w.PutBool(true)
		}
		r := state.NewReader(w.Bytes())
		got := map[string]bool{}
		state.ReadMap(r, &got, func(string) bool { return r.ReadBool() })
		require.ErrorIs(t, r.Err(), state.ErrMalformed, "%q", keys)
		require.Len(t, got, 1, "the entries before the error are kept")
	}
}
