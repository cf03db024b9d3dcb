package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/internal/pgtest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// TestSinkModel writes random particles, whose keys come and go, whose
// field kinds conflict and whose times repeat, to the microsecond or to
// the nanosecond, in random batches, and compares the table with a simple
// model: a particle with a key of another type than the key's first is
// rejected; of the others, the first of each series and time (in
// nanoseconds) is a row, with NULL in the columns it does not fill, and
// each later one merges its fields into that row, as InfluxDB merges the
// fields of a point written again. Each point is counted once: written,
// merged or duplicate; a point that changed nothing is a duplicate, or a
// merge when a point merged into in its batch did change the row.
func TestSinkModel(t *testing.T) {
	ctx := context.Background()
	d := openDB(t)
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		checks++
		table := d.table(fmt.Sprint("readings", checks))
		sink, err := postgres.NewSink(postgres.Config{URL: pgtest.URL(), Table: table, BatchSize: rapid.IntRange(1, 8).Draw(rt, "batch")})
		require.NoError(rt, err)
		defer func() {
			require.NoError(rt, sink.Close())
			// Each check drops its table: the hundreds of a run would
			// not fit the lock table of one DROP SCHEMA.
			_, err := d.conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
			require.NoError(rt, err)
		}()

		types := map[string]string{} // the model's column types
		type key struct {
			series string
			time   int64
		}
		want := map[key]map[string]any{}
		var accepted, unchanged int
		var out connectortest.Emitter
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		for i := range n {
			p := drawParticle(rt, i)
			cols := map[string]any{"measurement": p.Measurement}
			series := p.Measurement
			fits := true
			for _, tg := range p.Tags {
				cols[tg.Key] = tg.Value
				series += "," + tg.Key + "=" + tg.Value
				fits = fits && (types[tg.Key] == "" || types[tg.Key] == "text")
			}
			for _, f := range p.Fields {
				cols[f.Key] = jsonValue(f.Value)
				fits = fits && (types[f.Key] == "" || types[f.Key] == kindType(f.Value.Kind()))
			}
			err := sink.Process(ctx, p, &out)
			if !fits {
				require.ErrorIs(rt, err, operation.ErrRejected, "particle %d: %+v", i, p)
				continue
			}
			require.NoError(rt, err, "particle %d: %+v", i, p)
			for _, tg := range p.Tags {
				types[tg.Key] = "text"
			}
			for _, f := range p.Fields {
				types[f.Key] = kindType(f.Value.Kind())
			}
			accepted++
			k := key{series, p.Time}
			if want[k] == nil {
				want[k] = cols
			} else {
				same := true
				for _, f := range p.Fields {
					same = same && want[k][f.Key] == jsonValue(f.Value)
					want[k][f.Key] = jsonValue(f.Value)
				}
				if same {
					unchanged++
				}
			}
			if rapid.IntRange(0, 9).Draw(rt, "tick") == 0 {
				require.NoError(rt, sink.OnTick(ctx, 0, &out))
			}
		}
		require.NoError(rt, sink.Flush(ctx, &out))
		require.Empty(rt, out.Failed)
		require.Equal(rt, out.Held(), out.Acked, "every held particle is acknowledged")

		got := map[key]map[string]any{}
		st := sink.Stats()
		require.Equal(rt, uint64(len(want)), st.Written.Load(), "written")
		require.Equal(rt, uint64(accepted-len(want)), st.Merged.Load()+st.Duplicates.Load(), "merged and duplicates")
		require.LessOrEqual(rt, st.Duplicates.Load(), uint64(unchanged), "duplicates")
		rows, err := d.conn.Query(ctx, fmt.Sprintf(`SELECT series, time_ns, to_jsonb(t) - 'series' - 'time' - 'time_ns' FROM %s t WHERE time = to_timestamp(0) + time_ns / 1000 * interval '1 microsecond'`, table))
		require.NoError(rt, err)
		for rows.Next() {
			var k key
			var raw []byte
			require.NoError(rt, rows.Scan(&k.series, &k.time, &raw))
			cols := map[string]any{}
			require.NoError(rt, json.Unmarshal(raw, &cols))
			for c, v := range cols {
				if v == nil {
					delete(cols, c)
				}
			}
			got[k] = cols
		}
		require.NoError(rt, rows.Err())
		require.Equal(rt, want, got)
	})
}

// drawParticle draws the i-th particle of a stream: two tag keys and three
// field keys that come and go, few values and a few times.
func drawParticle(rt *rapid.T, i int) particle.Particle {
	p := particle.Particle{
		Time:        1_700_000_000_000_000_000 + int64(rapid.IntRange(0, 4).Draw(rt, "time"))*1000 + rapid.SampledFrom([]int64{0, 0, 1, 999}).Draw(rt, "ns"),
		Measurement: rapid.SampledFrom([]string{"m", "n"}).Draw(rt, "measurement"),
		Seq:         uint64(i),
	}
	for _, k := range []string{"a", "b"} {
		if rapid.Bool().Draw(rt, "tag "+k) {
			p.Tags = append(p.Tags, particle.Tag{Key: k, Value: rapid.SampledFrom([]string{"x", "y"}).Draw(rt, "value")})
		}
	}
	for _, k := range []string{"f", "g", "h"} {
		if !rapid.Bool().Draw(rt, "field "+k) {
			continue
		}
		v := int64(rapid.IntRange(-3, 3).Draw(rt, "value"))
		values := []particle.Value{particle.Int(v), particle.Uint(uint64(v + 3)), particle.Float(float64(v) / 2), particle.Bool(v > 0), particle.String(fmt.Sprint("s", v))}
		p.Fields = append(p.Fields, particle.Field{Key: k, Value: values[rapid.IntRange(0, len(values)-1).Draw(rt, "kind")]})
	}
	return p
}

// kindType returns the column type of a field kind, as format_type names it.
func kindType(k particle.ValueKind) string {
	switch k {
	case particle.KindFloat:
		return "double precision"
	case particle.KindInt, particle.KindUint:
		return "bigint"
	case particle.KindBool:
		return "boolean"
	case particle.KindString:
		return "text"
	}
	panic(errors.New("no column type for " + k.String()))
}

// jsonValue returns v as to_jsonb gives it back through encoding/json.
func jsonValue(v particle.Value) any {
	switch v.Kind() {
	case particle.KindFloat:
		return v.FloatValue()
	case particle.KindInt:
		return float64(v.IntValue())
	case particle.KindUint:
		return float64(v.UintValue())
	case particle.KindBool:
		return v.BoolValue()
	}
	return v.StringValue()
}
