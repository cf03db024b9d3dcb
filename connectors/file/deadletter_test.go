package file_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestDeadLetterWriter(t *testing.T) {
	var out bytes.Buffer
	w := file.NewDeadLetterWriter(&out, file.DeadLetterConfig{})
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

// fillingDisk fails its first writes as a full disk does, writing part of
// the first, then writes.
type fillingDisk struct {
	fails int
	out   bytes.Buffer
}

func (f *fillingDisk) Write(b []byte) (int, error) {
	if f.fails > 0 {
		f.fails--
		n := len(b) / 2
		f.out.Write(b[:n])
		return n, errors.New("no space left on device")
	}
	return f.out.Write(b)
}

// instant is a wall clock whose tickers fire at once, and whose time moves
// a second at every reading: backoffs cost no time, and give-up times
// pass as the attempts go.
type instant struct{ now time.Time }

func (c *instant) Now() time.Time {
	c.now = c.now.Add(time.Second)
	return c.now
}

func (c *instant) NewTicker(time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch, func() {}
}

// A writer that fails for a while is retried, the rest of a line cut short
// written, so that every dead letter is whole; one that fails for longer
// than the give-up time is given up on, once, and later dead letters are
// counted lost.
func TestDeadLetterWriterRetriesAFullDisk(t *testing.T) {
	tests := []struct {
		name      string
		fails     int
		wantLines int
		wantErr   bool
	}{
		{"writes", 0, 2, false},
		{"fails for a while", 3, 2, false},
		{"fails for too long", 100, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := &fillingDisk{fails: tt.fails}
			var gaveUp []error
			w := file.NewDeadLetterWriter(disk, file.DeadLetterConfig{
				Retry:    topology.DestinationConfig{GiveUpAfter: 10 * time.Second},
				OnGiveUp: func(err error) { gaveUp = append(gaveUp, err) },
				Wall:     &instant{now: time.Unix(0, 0)},
			})
			for range 2 {
				w.DeadLetter(context.Background(), topology.DeadLetter{Reason: "invalid", Raw: []byte("m v=oops")})
			}
			if tt.wantErr {
				require.Error(t, w.Err())
				assert.ErrorContains(t, w.Err(), "no space left on device")
				assert.Len(t, gaveUp, 1, "given up once")
				assert.Equal(t, uint64(2), w.Lost())
				return
			}
			require.NoError(t, w.Err())
			assert.Empty(t, gaveUp)
			lines := strings.Split(strings.TrimSuffix(disk.out.String(), "\n"), "\n")
			require.Len(t, lines, tt.wantLines)
			for _, l := range lines {
				var rec file.DeadLetterRecord
				require.NoError(t, json.Unmarshal([]byte(l), &rec), "a whole line: %q", l)
				assert.Equal(t, "m v=oops", rec.Payload)
			}
		})
	}
}
