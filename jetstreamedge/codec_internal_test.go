package jetstreamedge

import (
	"errors"
	"io"
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/internal/cputime"
	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

func drawValue(t *rapid.T) particle.Value {
	switch rapid.IntRange(0, 5).Draw(t, "kind") {
	case 0:
		return particle.Float(rapid.Float64().Draw(t, "f"))
	case 5:
		// A reading with a few decimals, as sensors send them.
		return particle.Float(float64(rapid.Int64Range(-1e7, 1e7).Draw(t, "m")) / math.Pow10(rapid.IntRange(0, 8).Draw(t, "decimals")))
	case 1:
		return particle.Int(rapid.Int64().Draw(t, "i"))
	case 2:
		return particle.Uint(rapid.Uint64().Draw(t, "u"))
	case 3:
		return particle.String(rapid.StringMatching(`[a-c]{0,3}`).Draw(t, "s"))
	default:
		return particle.Bool(rapid.Bool().Draw(t, "b"))
	}
}

func drawBatch(t *rapid.T) edge.Batch {
	b := edge.Batch{
		Input:   rapid.IntRange(0, 1000).Draw(t, "input"),
		High:    rapid.SampledFrom([]int64{math.MinInt64, 0, 1e18}).Draw(t, "high"),
		Promise: rapid.Int64().Draw(t, "promise"),
		Drained: rapid.Bool().Draw(t, "drained"),
		EOS:     rapid.Bool().Draw(t, "eos"),
	}
	key := rapid.StringMatching(`[a-c]{0,2}`)
	for range rapid.IntRange(0, 20).Draw(t, "n") {
		p := particle.Particle{
			Time:   rapid.Int64Range(-5, 5).Draw(t, "t") * 1e9,
			Origin: rapid.Uint32Range(0, 3).Draw(t, "origin"),
			Seq:    rapid.Uint64().Draw(t, "seq"),
		}
		if rapid.IntRange(0, 5).Draw(t, "meta") == 0 {
			p.Meta = rapid.SampledFrom([]particle.Meta{
				metaparticle.Tick{Domain: metaparticle.StreamTime},
				metaparticle.SpeedChange{Speed: 10},
				metaparticle.SpeedChange{Paused: true},
			}).Draw(t, "m")
		} else {
			p.Measurement = key.Draw(t, "measurement")
			for range rapid.IntRange(0, 3).Draw(t, "tags") {
				p.Tags = append(p.Tags, particle.Tag{Key: key.Draw(t, "tk"), Value: key.Draw(t, "tv")})
			}
			for range rapid.IntRange(0, 3).Draw(t, "fields") {
				p.Fields = append(p.Fields, particle.Field{Key: key.Draw(t, "fk"), Value: drawValue(t)})
			}
		}
		high := p.Time + rapid.SampledFrom([]int64{0, 0, 7, 3e9}).Draw(t, "ahead")
		b.Items = append(b.Items, edge.Item{Particle: p, High: high, Replay: rapid.Bool().Draw(t, "replay")})
	}
	return b
}

// Every batch decodes to itself, with its stamp, and a number set after
// encoding is the one read.
func TestCodecRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := drawBatch(t)
		st := stamp{sender: rapid.Uint64().Draw(t, "sender"), number: rapid.Uint64().Draw(t, "number"), settled: rapid.Uint64().Draw(t, "settled")}
		var e encoder
		data, err := e.appendBatch(nil, stamp{sender: st.sender}, &b)
		require.NoError(t, err)
		setStamp(data, st.number, st.settled)
		head, err := readStamp(data)
		require.NoError(t, err)
		require.Equal(t, st, head)
		var got edge.Batch
		gotStamp, err := decodeBatch(data, &got)
		require.NoError(t, err)
		require.Equal(t, st, gotStamp)
		if len(b.Items) == 0 {
			b.Items = got.Items[:0]
		}
		require.Equal(t, b, got)
	})
}

// A float goes as a decimal in a few bytes when one reads back as
// exactly it, and as its eight bytes otherwise.
func TestCodecFloats(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		size int
	}{
		{0, 2}, {3, 2}, {21.21, 3}, {-51.53, 3}, {0.1, 2}, {1e-6, 2}, {123456.789012, 7},
		{math.Copysign(0, -1), 9}, {math.NaN(), 9}, {math.Inf(1), 9}, {math.Inf(-1), 9},
		{1e-7, 9}, {1e300, 9}, {math.Pi, 9}, {1 << 60, 9}, {math.MaxFloat64, 9}, {math.SmallestNonzeroFloat64, 9},
	} {
		data := appendFloat(nil, tt.v)
		require.Len(t, data, tt.size, "%v", tt.v)
		d := decoder{data: data}
		got := d.value(particle.KindFloat)
		require.NoError(t, d.err)
		require.Empty(t, d.data)
		require.Equal(t, math.Float64bits(tt.v), math.Float64bits(got.FloatValue()), "%v", tt.v)
	}
}

// The particles of a message share their tags, but appending to one's
// tags or fields leaves the others as they were.
func TestCodecDecodedParticlesAreIndependent(t *testing.T) {
	p := particle.Particle{Measurement: "m", Tags: []particle.Tag{{Key: "node", Value: "1"}},
		Fields: []particle.Field{{Key: "t", Value: particle.Float(20.5)}}}
	b := edge.Batch{Items: []edge.Item{{Particle: p}, {Particle: p}}}
	var e encoder
	data, err := e.appendBatch(nil, stamp{}, &b)
	require.NoError(t, err)
	var got edge.Batch
	_, err = decodeBatch(data, &got)
	require.NoError(t, err)
	first := &got.Items[0].Particle
	first.Tags = append(first.Tags, particle.Tag{Key: "x", Value: "y"})
	first.Fields = append(first.Fields, particle.Field{Key: "x", Value: particle.Int(1)})
	require.Equal(t, p, got.Items[1].Particle)
}

type customMeta struct{}

func (customMeta) MetaType() string { return "custom" }

func TestCodecRefusesUnknownMeta(t *testing.T) {
	var e encoder
	b := edge.Batch{Items: []edge.Item{{Particle: particle.Particle{Meta: customMeta{}}}}}
	_, err := e.appendBatch(nil, stamp{}, &b)
	var unknown *UnknownMetaError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, "custom", unknown.Type)
}

// A message that decodes re-encodes to a message that decodes to the same
// batch, which encodes the same again; anything else is ErrMalformed,
// never a panic.
func FuzzDecode(f *testing.F) {
	var e encoder
	for _, b := range []edge.Batch{
		{},
		{Input: 3, High: 5, Promise: 4, EOS: true},
		{Items: []edge.Item{
			{Particle: particle.Particle{Time: 1, Origin: 2, Seq: 3, Measurement: "m", Tags: []particle.Tag{{Key: "k", Value: "v"}},
				Fields: []particle.Field{{Key: "f", Value: particle.Float(1.5)}, {Key: "s", Value: particle.String("v")}}}, High: 1},
			{Particle: particle.Particle{Time: 2, Origin: 2, Seq: 4, Meta: metaparticle.SpeedChange{Speed: 2}}, High: 9, Replay: true},
			{Particle: particle.Particle{Time: 3, Origin: 2, Seq: 5, Measurement: "m", Tags: []particle.Tag{{Key: "k", Value: "v"}},
				Fields: []particle.Field{{Key: "f", Value: particle.Float(-0.25)}, {Key: "s", Value: particle.String("w")}}}, High: 3},
			{Particle: particle.Particle{Time: 4, Origin: 2, Seq: 6, Measurement: "m", Fields: []particle.Field{
				{Key: "i", Value: particle.Int(-3)}, {Key: "u", Value: particle.Uint(7)}, {Key: "b", Value: particle.Bool(true)}}}, High: 4},
		}},
	} {
		data, err := e.appendBatch(nil, stamp{sender: 1 << 60, number: 7}, &b)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b edge.Batch
		st, err := decodeBatch(data, &b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		again, err := e.appendBatch(nil, st, &b)
		require.NoError(t, err)
		var b2 edge.Batch
		st2, err := decodeBatch(again, &b2)
		require.NoError(t, err)
		require.Equal(t, st, st2)
		// Compared encoded: a NaN speed is not equal to itself.
		third, err := e.appendBatch(nil, st2, &b2)
		require.NoError(t, err)
		require.Equal(t, again, third)
	})
}

// Recording returns the particles of the test recording; the external
// tests use it too.
func Recording(tb testing.TB) []particle.Particle {
	data, err := os.ReadFile("../testdata/library1-r1.lp")
	require.NoError(tb, err)
	d, err := particle.NewDecoderBytes(data, "library1", particle.DecoderConfig{Origin: 1})
	require.NoError(tb, err)
	var ps []particle.Particle
	for {
		var p particle.Particle
		err := d.Decode(&p)
		if errors.Is(err, io.EOF) {
			return ps
		}
		require.NoError(tb, err)
		ps = append(ps, p)
	}
}

// BenchmarkCodec encodes and decodes the test recording in batches of
// 256, and reports the bytes per particle on the wire against line
// protocol's.
func BenchmarkCodec(b *testing.B) {
	ps := Recording(b)
	var batches []edge.Batch
	var lpBytes int
	for i := 0; i < len(ps); i += 256 {
		var rb edge.Batch
		for _, p := range ps[i:min(i+256, len(ps))] {
			rb.Items = append(rb.Items, edge.Item{Particle: p, High: p.Time})
			line, err := particle.AppendLineProtocol(nil, &p, particle.Nanosecond)
			require.NoError(b, err)
			lpBytes += len(line)
		}
		batches = append(batches, rb)
	}
	var (
		e       encoder
		buf     []byte
		wire    int
		decoded edge.Batch
	)
	b.ReportAllocs()
	cpu0 := CPUTime(b)
	for b.Loop() {
		wire = 0
		for i := range batches {
			var err error
			buf, err = e.appendBatch(buf[:0], stamp{sender: 1, number: uint64(i + 1)}, &batches[i])
			if err != nil {
				b.Fatal(err)
			}
			wire += len(buf)
			if _, err := decodeBatch(buf, &decoded); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(wire)/float64(len(ps)), "B/particle")
	b.ReportMetric(float64(lpBytes)/float64(len(ps)), "lp-B/particle")
	b.ReportMetric(float64(len(ps))*float64(b.N)/b.Elapsed().Seconds(), "particles/s")
	b.ReportMetric(float64((CPUTime(b)-cpu0).Nanoseconds())/float64(len(ps)*b.N), "cpu-ns/particle")
}

// CPUTime returns the CPU time the process used so far. On a shared
// machine a benchmark's CPU time per particle changes less with the other
// work than its throughput; the external tests use it too.
func CPUTime(tb testing.TB) time.Duration {
	d, err := cputime.Process()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func TestAtLeast(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{{"2.9.10", false}, {"2.10.22", false}, {"2.11.0", true}, {"2.15.3", true}, {"3.0.0", true}, {"unknown", true}} {
		if got := atLeast(tt.v, 2, 11); got != tt.want {
			t.Errorf("atLeast(%q, 2, 11) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
