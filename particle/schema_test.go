package particle_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/particle"
)

type reading struct {
	At       time.Time `sensor:",time"`
	Node     string    `sensor:"node,tag"`
	Room     string    `sensor:"room,tag"`
	Temp     float64   `sensor:"temperature"`
	Seq      int64     `sensor:"seq"`
	Count    uint32    `sensor:"count"`
	Ok       bool      `sensor:"ok"`
	Label    string    `sensor:"label"`
	Ignored  int
	internal float32
}

func TestSchemaRoundTrip(t *testing.T) {
	s, err := particle.NewSchema[reading]("wsn")
	require.NoError(t, err)
	rapid.Check(t, func(t *rapid.T) {
		in := reading{
			At:    time.Unix(0, rapid.Int64Range(0, 1<<62).Draw(t, "t")).UTC(),
			Node:  rapid.String().Draw(t, "node"),
			Room:  rapid.String().Draw(t, "room"),
			Temp:  rapid.Float64().Draw(t, "temp"),
			Seq:   rapid.Int64().Draw(t, "seq"),
			Count: rapid.Uint32().Draw(t, "count"),
			Ok:    rapid.Bool().Draw(t, "ok"),
			Label: rapid.String().Draw(t, "label"),
		}
		p := s.Encode(&in)
		var out reading
		require.NoError(t, s.Decode(&p, &out))
		require.Equal(t, in, out)

		// Untagged and unexported fields are neither encoded nor decoded.
		in.Ignored, in.internal = 7, 0.5
		require.Equal(t, p, s.Encode(&in))
	})
}

func TestSchemaDecodeConvertsNumbersAndNamesBadFields(t *testing.T) {
	s, err := particle.NewSchema[reading]("wsn")
	require.NoError(t, err)
	cases := []struct {
		name    string
		fields  []particle.Field
		want    reading
		wantErr string
	}{
		{"int into float", []particle.Field{{Key: "temperature", Value: particle.Int(21)}}, reading{Temp: 21}, ""},
		{"float into int", []particle.Field{{Key: "seq", Value: particle.Float(7)}}, reading{Seq: 7}, ""},
		{"uint into uint32", []particle.Field{{Key: "count", Value: particle.Uint(9)}}, reading{Count: 9}, ""},
		{"missing fields stay zero", nil, reading{}, ""},
		{"string into float", []particle.Field{{Key: "temperature", Value: particle.String("hot")}}, reading{}, `field "temperature": string value for a number`},
		{"number into bool", []particle.Field{{Key: "ok", Value: particle.Int(1)}}, reading{}, `field "ok": int value for a bool`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := particle.Particle{Time: 0, Measurement: "wsn", Fields: tc.fields}
			var got reading
			err := s.Decode(&p, &got)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, particle.ErrSchema)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.want.At = time.Unix(0, 0).UTC()
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSchemaRejectsUnsupportedStructs(t *testing.T) {
	type badTag struct {
		N int `sensor:"n,tag"`
	}
	type badTime struct {
		T string `sensor:",time"`
	}
	type badField struct {
		F []int `sensor:"f"`
	}
	type badOption struct {
		F int `sensor:"f,index"`
	}
	for _, err := range []error{
		errOf(particle.NewSchema[badTag]("m")),
		errOf(particle.NewSchema[badTime]("m")),
		errOf(particle.NewSchema[badField]("m")),
		errOf(particle.NewSchema[badOption]("m")),
		errOf(particle.NewSchema[int]("m")),
	} {
		require.ErrorIs(t, err, particle.ErrSchema)
	}
}

func errOf[T any](_ T, err error) error { return err }

func ExampleSchema() {
	type reading struct {
		At   int64   `sensor:",time"`
		Node string  `sensor:"node,tag"`
		Temp float64 `sensor:"temperature"`
	}
	s, _ := particle.NewSchema[reading]("wsn")
	p := s.Encode(&reading{At: 1163438041250000000, Node: "20", Temp: 22.08})
	line, _ := particle.AppendLineProtocol(nil, &p, particle.Millisecond)
	fmt.Print(string(line))

	var back reading
	_ = s.Decode(&p, &back)
	fmt.Printf("%+v\n", back)
	// Output:
	// wsn,node=20 temperature=22.08 1163438041250
	// {At:1163438041250000000 Node:20 Temp:22.08}
}

func BenchmarkSchemaDecode(b *testing.B) {
	s, _ := particle.NewSchema[reading]("wsn")
	in := reading{At: time.Unix(1, 0), Node: "20", Room: "lib", Temp: 22.08, Seq: 1, Count: 2, Ok: true, Label: "x"}
	p := s.Encode(&in)
	var out reading
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Decode(&p, &out); err != nil {
			b.Fatal(err)
		}
	}
}
