package mqtt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// received returns the values of the results sub got, in order.
func received(t *testing.T, sub *mosquittotest.Subscription) []int64 {
	t.Helper()
	var vals []int64
	for _, m := range sub.Payloads("results/s") {
		var v int64
		_, err := fmt.Sscanf(m, "reading,sensor=s v=%di", &v)
		require.NoError(t, err, "%s", m)
		vals = append(vals, v)
	}
	return vals
}

// newStagingSink returns a sink on broker, closed at the end of the test.
func newStagingSink(t *testing.T, broker *mosquittotest.Broker, id string) *Sink {
	t.Helper()
	s, err := NewSink(SinkConfig{ConnConfig: ConnConfig{Brokers: []string{broker.URL()}, ClientID: id}, Topic: "results/{sensor}", MaxInflight: 4})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// processRange has s process the readings from..to-1 as one instance of
// a run that takes checkpoints.
func processRange(t *testing.T, s *Sink, out operation.Emitter, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		p := particle.Particle{Time: int64(i), Measurement: "reading", Tags: []particle.Tag{{Key: "sensor", Value: "s"}},
			Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i))}}}
		require.NoError(t, s.Process(context.Background(), p, out))
	}
}

func snapshot(t *testing.T, s *Sink) []byte {
	t.Helper()
	w := state.NewWriter(nil)
	require.NoError(t, s.Snapshot(w))
	return w.Bytes()
}

// upTo returns 0..n-1.
func upTo(n int) []int64 {
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = int64(i)
	}
	return vals
}

func eventually(t *testing.T, sub *mosquittotest.Subscription, want []int64) {
	t.Helper()
	require.Eventually(t, func() bool { return len(received(t, sub)) >= len(want) }, 10*time.Second, 5*time.Millisecond, "got %v", received(t, sub))
	require.Equal(t, want, received(t, sub))
}

// A sink that publishes at checkpoints publishes what a snapshot holds
// once the checkpoint is complete, and only that: what it takes after the
// snapshot waits for the next.
func TestSinkPublishesAtCommits(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	got := broker.Subscribe(t, "commit-sub", "results/#")
	s := newStagingSink(t, broker, "commit-sink")
	out := &connectortest.Emitter{Checkpointed: true}

	processRange(t, s, out, 0, 10)
	require.Zero(t, s.Stats().Published.Load(), "nothing goes out before a checkpoint")
	snapshot(t, s)
	processRange(t, s, out, 10, 13)
	s.Committed()
	eventually(t, got, upTo(10))
	require.Eventually(t, func() bool { return s.Stats().Confirmed.Load() == 10 }, 10*time.Second, time.Millisecond)
	require.Equal(t, uint64(10), s.Stats().Published.Load(), "the readings after the snapshot wait")
	require.Equal(t, 13, out.Acked, "the engine acknowledges the inputs at the checkpoint")

	snapshot(t, s) // a checkpoint that fails: the next one covers it
	processRange(t, s, out, 13, 15)
	snapshot(t, s)
	s.Committed()
	eventually(t, got, upTo(15))
}

// A restore publishes what its checkpoint holds and the mark says is not
// out yet, in order, each once: nothing, everything, or the rest of a
// batch the killed process had begun.
func TestSinkRestorePublishesWhatIsNotOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		// committed tells whether the first sink published its
		// checkpoint before it was lost; mark, if not, sets the mark by
		// hand, as if it had published that many.
		committed bool
		mark      int
	}{
		{name: "all out", committed: true},
		{name: "none out"},
		{name: "some out", mark: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broker := mosquittotest.Start(t, mosquittotest.Config{})
			got := broker.Subscribe(t, "commit-sub", "results/#")
			first := newStagingSink(t, broker, "commit-first")
			firstOut := &connectortest.Emitter{Checkpointed: true}
			processRange(t, first, firstOut, 0, 10)
			snap := snapshot(t, first)
			processRange(t, first, firstOut, 10, 12)
			var already []int64
			if tc.committed {
				first.Committed()
				eventually(t, got, upTo(10))
				already = upTo(10)
			}
			first.mu.Lock()
			run := first.staging.run
			first.mu.Unlock()
			if tc.mark > 0 {
				// Published as the first sink would: the readings, then
				// the mark.
				cl := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("commit-by-hand"))
				require.True(t, cl.Connect().WaitTimeout(10*time.Second))
				defer cl.Disconnect(100)
				for i := range tc.mark {
					tok := cl.Publish("results/s", 1, false, fmt.Sprintf("reading,sensor=s v=%di %d", i, i))
					require.True(t, tok.WaitTimeout(10*time.Second))
				}
				tok := cl.Publish(DefaultCommitTopic+"/"+run, 1, true, strconv.Itoa(tc.mark))
				require.True(t, tok.WaitTimeout(10*time.Second))
				eventually(t, got, upTo(tc.mark))
				already = upTo(tc.mark)
			}
			require.NoError(t, first.Close()) // its committed batch is out, the rest never

			restored := newStagingSink(t, broker, "commit-restored")
			require.NoError(t, restored.Restore(state.NewReader(snap)))
			// The restored run takes again what followed the checkpoint.
			out := &connectortest.Emitter{Checkpointed: true}
			processRange(t, restored, out, 10, 12)
			snapshot(t, restored)
			restored.Committed()
			eventually(t, got, upTo(12))
			require.Eventually(t, func() bool { return restored.Stats().Confirmed.Load() == uint64(12-len(already)) }, 10*time.Second, time.Millisecond)
			require.NoError(t, restored.Close())
			require.Equal(t, uint64(12-len(already)), restored.Stats().Confirmed.Load(), "each published once")
		})
	}
}

// At the end of the stream no checkpoint may follow: Close publishes
// everything staged. A sink stopped without an end publishes only what
// a checkpoint committed.
func TestSinkCloseAfterTheEndPublishesEverything(t *testing.T) {
	for _, ended := range []bool{true, false} {
		t.Run(fmt.Sprint("ended=", ended), func(t *testing.T) {
			broker := mosquittotest.Start(t, mosquittotest.Config{})
			got := broker.Subscribe(t, "commit-sub", "results/#")
			s := newStagingSink(t, broker, "commit-end")
			out := &connectortest.Emitter{Checkpointed: true}
			processRange(t, s, out, 0, 5)
			snapshot(t, s)
			s.Committed()
			processRange(t, s, out, 5, 9)
			if ended {
				require.NoError(t, s.Flush(context.Background(), out))
			}
			require.NoError(t, s.Close())
			want := 5
			if ended {
				want = 9
			}
			require.Equal(t, uint64(want), s.Stats().Confirmed.Load())
			eventually(t, got, upTo(want))
		})
	}
}

// A sink that publishes at checkpoints serves one instance: two take
// their snapshots at different points of the stream.
func TestSinkAtCommitsRefusesASecondInstance(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	s := newStagingSink(t, broker, "commit-two")
	processRange(t, s, &connectortest.Emitter{Checkpointed: true}, 0, 1)
	p := particle.Particle{Measurement: "reading", Tags: []particle.Tag{{Key: "sensor", Value: "s"}}, Fields: []particle.Field{{Key: "v", Value: particle.Int(1)}}}
	err := s.Process(context.Background(), p, &connectortest.Emitter{Checkpointed: true})
	require.ErrorIs(t, err, operation.ErrRefused)
	require.ErrorContains(t, err, "at_least_once")
}

// A broker that refuses the subscription to the commit topic stops the
// sink: without the mark it cannot tell what a restore must publish.
func TestSinkStopsWhenTheMarkIsRefused(t *testing.T) {
	acl := filepath.Join(t.TempDir(), "acl")
	require.NoError(t, os.WriteFile(acl, []byte("user u\ntopic readwrite results/#\n"), 0o600))
	broker := mosquittotest.Start(t, mosquittotest.Config{Users: map[string]string{"u": "p"}, Extra: "acl_file " + acl + "\n"})
	newSink := func(id string) *Sink {
		s, err := NewSink(SinkConfig{ConnConfig: ConnConfig{Brokers: []string{broker.URL()}, ClientID: id, Username: "u", Password: "p"},
			Topic: "results/{sensor}", MaxInflight: 4, PublishTimeout: time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	first := newSink("mark-first")
	processRange(t, first, &connectortest.Emitter{Checkpointed: true}, 0, 5)
	snap := snapshot(t, first)

	restored := newSink("mark-restored")
	require.NoError(t, restored.Restore(state.NewReader(snap)))
	p := particle.Particle{Measurement: "reading", Tags: []particle.Tag{{Key: "sensor", Value: "s"}}, Fields: []particle.Field{{Key: "v", Value: particle.Int(5)}}}
	out := &connectortest.Emitter{Checkpointed: true}
	var err error
	require.Eventually(t, func() bool {
		err = restored.Process(context.Background(), p, out)
		return err != nil
	}, 10*time.Second, time.Millisecond)
	require.ErrorIs(t, err, operation.ErrRefused)
	require.ErrorIs(t, err, ErrMarkRefused)
	require.ErrorContains(t, err, DefaultCommitTopic)
}
