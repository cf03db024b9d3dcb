package file_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestDeadLetterWriter(t *testing.T) {
	var out bytes.Buffer
	w := file.NewDeadLetterWriter(&out)
	bad := &particle.DecodeError{Source: "in.lp", Line: 2, Column: 7, Err: particle.ErrUnterminatedString}
	w.DeadLetter(context.Background(), topology.DeadLetter{Component: "replay", Reason: "invalid", Err: bad, Raw: []byte(`env t="unterminated`)})
	w.DeadLetter(context.Background(), topology.DeadLetter{Component: "mqtt", Reason: "invalid", Err: errors.New("bad"), Raw: []byte{0xff, 0}})
	p := particle.Particle{Time: 5, Measurement: "m", Fields: []particle.Field{{Key: "v", Value: particle.Float(1)}}}
	w.DeadLetter(context.Background(), topology.DeadLetter{Component: "out", Instance: 1, Reason: "late", Particle: &p})
	require.NoError(t, w.Err())

	var got []file.DeadLetterRecord
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var rec file.DeadLetterRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
		got = append(got, rec)
	}
	assert.Equal(t, []file.DeadLetterRecord{
		{Component: "replay", Reason: "invalid", Source: "in.lp", Line: 2, Column: 7, Error: bad.Error(), Payload: `env t="unterminated`},
		{Component: "mqtt", Reason: "invalid", Error: "bad", PayloadBase64: []byte{0xff, 0}},
		{Component: "out", Instance: 1, Reason: "late", Payload: "m v=1 5"},
	}, got)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestDeadLetterWriterKeepsFirstError(t *testing.T) {
	w := file.NewDeadLetterWriter(failingWriter{})
	w.DeadLetter(context.Background(), topology.DeadLetter{Reason: "invalid"})
	assert.EqualError(t, w.Err(), "disk full")
}
