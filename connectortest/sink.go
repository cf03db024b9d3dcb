package connectortest

import (
	"errors"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/topology"
)

// TestSink runs the scenarios for a sink connector. newHarness makes a
// fresh harness, with its own destination, for each scenario.
func TestSink(t *testing.T, f Features, newHarness func(t *testing.T) SinkHarness) {
	f.setDefaults()
	t.Run("KillMidStream", func(t *testing.T) { testAckedIsDurable(t, f, newHarness(t)) })
	t.Run("DestinationFailure", func(t *testing.T) {
		h := newHarness(t)
		var breaker Breaker
		switch h := h.(type) {
		case Breaker:
			breaker = h
		case Broker:
			breaker = brokerBreaker{h}
		default:
			t.Skip("the harness is neither a Breaker nor a Broker")
		}
		testDestinationFailure(t, f, h, breaker)
	})
}

// startSink runs a source of f.Messages readings into the harness's sink.
func startSink(t *testing.T, f Features, h SinkHarness) (*source, *running) {
	src := newSource(f.Messages)
	sink := h.NewSink(t)
	r := start(t, func(topo *topology.Topology) {
		topo.AddSource("source", topology.Single(src), topology.SourceConfig{})
		topo.AddBolt("sink", operation.Stateless(sink), topology.BoltConfig{Buffer: buffer}).
			Input("source", topology.Global())
	})
	return src, r
}

// testAckedIsDurable checks, while the stream still runs (no end of
// stream, no Close), that every reading the sink acknowledged is in the
// destination: a kill at that moment would lose none of them.
func testAckedIsDurable(t *testing.T, f Features, h SinkHarness) {
	src, r := startSink(t, f, h)
	var acked []int
	WaitFor(t, f.Timeout, "every reading acknowledged without an end of stream", func() bool {
		acked, _ = src.state()
		return len(acked) == f.Messages
	})
	checkDestination(t, f, h, acked)
	r.stop(t)
	if _, failed := src.state(); len(failed) > 0 {
		t.Errorf("%d readings failed", len(failed))
	}
}

// checkDestination checks that the destination holds every reading of
// want within the delivery delay.
func checkDestination(t *testing.T, f Features, h SinkHarness, want []int) {
	t.Helper()
	deadline := time.Now().Add(f.DeliveryDelay)
	for {
		have := newSeen()
		for _, n := range h.Read(t) {
			have.add(n)
		}
		var missing []int
		for _, n := range want {
			if have.n[n] == 0 {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d readings acknowledged and not in the destination, among them %v", len(missing), missing[:min(10, len(missing))])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testDestinationFailure makes the destination fail while readings flow,
// then work again: every reading ends in the destination, none failed or
// dead-lettered.
func testDestinationFailure(t *testing.T, f Features, h SinkHarness, b Breaker) {
	b.Break(t)
	src, r := startSink(t, f, h)
	WaitFor(t, f.Timeout, "readings at the sink", func() bool { return r.topo.Stats("sink").In.Load() > 0 })
	// Longer than a retry policy gives a failing input: the outage is not
	// the data's fault, however long it lasts.
	time.Sleep(f.Outage)
	b.Mend(t)
	WaitFor(t, f.Timeout, "every reading acknowledged or failed", func() bool {
		acked, failed := src.state()
		return len(acked)+len(failed) >= f.Messages
	})
	acked, failed := src.state()
	r.stop(t)
	checkDestination(t, f, h, acked)
	var errs []error
	for _, err := range failed {
		errs = append(errs, err)
	}
	for _, d := range r.deadLetters() {
		errs = append(errs, d.Err)
	}
	if len(errs) > 0 {
		t.Fatalf("%d readings failed and %d dead-lettered because the destination did: %v",
			len(failed), len(r.deadLetters()), errors.Join(errs[:min(3, len(errs))]...))
	}
}

// brokerBreaker fails a destination by stopping its broker.
type brokerBreaker struct{ b Broker }

func (b brokerBreaker) Break(t testing.TB) { b.b.StopBroker(t) }
func (b brokerBreaker) Mend(t testing.TB)  { b.b.StartBroker(t) }
