package connectortest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/topology"
)

// TestSource runs the scenarios for a source connector. newHarness makes
// a fresh harness for each scenario (its own broker, state, identity); in
// the child process of KillMidStream, it is called with an Env whose
// Child is true and must then reuse what the test process made. Call
// TestSource once per test or subtest: the child process runs the test
// that called it.
func TestSource(t *testing.T, f Features, newHarness func(t *testing.T, env *Env) SourceHarness) {
	f.setDefaults()
	if env := childEnv(); env != nil {
		runChild(t, newHarness(t, env))
		return
	}
	name := t.Name()
	t.Run("Delivery", func(t *testing.T) { testDelivery(t, f, newHarness(t, newEnv())) })
	t.Run("KillMidStream", func(t *testing.T) {
		if !f.Restart {
			t.Skip("Features.Restart is false")
		}
		env := newEnv()
		testKill(t, f, name, env, newHarness(t, env))
	})
	t.Run("BrokerRestart", func(t *testing.T) {
		h := newHarness(t, newEnv())
		b, ok := h.(Broker)
		if !ok {
			t.Skip("the harness is no Broker")
		}
		testBrokerRestart(t, f, h, b)
	})
	t.Run("InOrderAcks", func(t *testing.T) {
		h := newHarness(t, newEnv())
		r, ok := h.(AckRecorder)
		if !ok {
			t.Skip("the harness is no AckRecorder")
		}
		testInOrderAcks(t, f, h, r)
	})
}

// startCollecting runs the harness's source into a collector.
func startCollecting(t *testing.T, h SourceHarness, got *seen) *running {
	return start(t, func(topo *topology.Topology) {
		topo.AddSource("source", topology.Single(h.NewSource(t)), topology.SourceConfig{})
		topo.AddBolt("collect", operation.Stateless(collector{got}), topology.BoltConfig{Buffer: buffer}).
			Input("source", topology.Global())
	})
}

// awaitSubscribed publishes probe readings (number -1) until one arrives:
// a broker drops what is published before the first subscription.
func awaitSubscribed(t *testing.T, f Features, h SourceHarness, got *seen) {
	t.Helper()
	WaitFor(t, f.Timeout, "the source to take a first message", func() bool {
		h.Publish(t, probe())
		return got.has(-1, 0)
	})
}

func testDelivery(t *testing.T, f Features, h SourceHarness) {
	got := newSeen()
	r := startCollecting(t, h, got)
	awaitSubscribed(t, f, h, got)
	rs := newReadings()
	h.Publish(t, rs.span(0, f.Messages))
	WaitFor(t, f.Timeout, "every message", func() bool { return got.has(0, f.Messages) })
	r.stop(t)
	if dl := r.deadLetters(); len(dl) > 0 {
		t.Errorf("%d dead letters, first: %+v", len(dl), dl[0])
	}
}

func testBrokerRestart(t *testing.T, f Features, h SourceHarness, b Broker) {
	got := newSeen()
	r := startCollecting(t, h, got)
	awaitSubscribed(t, f, h, got)
	rs := newReadings()
	half := f.Messages / 2
	h.Publish(t, rs.span(0, half))
	WaitFor(t, f.Timeout, "the first half", func() bool { return got.has(0, half) })
	b.StopBroker(t)
	b.StartBroker(t)
	h.Publish(t, rs.span(half, f.Messages))
	WaitFor(t, f.Timeout, "every message after the restart", func() bool { return got.has(0, f.Messages) })
	r.stop(t)
}

func testInOrderAcks(t *testing.T, f Features, h SourceHarness, rec AckRecorder) {
	got := newSeen()
	r := start(t, func(topo *topology.Topology) {
		topo.AddSource("source", topology.Single(h.NewSource(t)), topology.SourceConfig{})
		topo.AddBolt("reverse", func() operation.Operation { return &reverser{seen: got} }, topology.BoltConfig{Parallelism: 4, Buffer: buffer}).
			Input("source", topology.Fields("sensor"))
	})
	awaitSubscribed(t, f, h, got)
	rs := newReadings()
	h.Publish(t, rs.span(0, f.Messages))
	WaitFor(t, f.Timeout, "every message acknowledged", func() bool {
		_, acked := rec.Acks()
		return got.has(0, f.Messages) && len(acked) >= f.Messages
	})
	r.stop(t)
	delivered, acked := rec.Acks()
	for i, id := range acked {
		if i >= len(delivered) || delivered[i] != id {
			t.Fatalf("acknowledgement %d is of message %d; delivered in order: %v", i, id, delivered[max(0, i-3):min(len(delivered), i+3)])
		}
	}
}

// testKill runs the source in a child process that records what it takes
// to a file, kills it with SIGKILL mid-stream, starts it again and checks
// that every message arrives.
func testKill(t *testing.T, f Features, name string, env *Env, h SourceHarness) {
	out := filepath.Join(t.TempDir(), "out.lp")
	vals, err := json.Marshal(env.vals)
	if err != nil {
		t.Fatal(err)
	}
	numbers := func() *seen {
		s := newSeen()
		b, _ := os.ReadFile(out)
		for _, n := range NumbersIn(b) {
			s.add(n)
		}
		return s
	}
	startChild := func() (*exec.Cmd, *bytes.Buffer) {
		var log bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run="+runPattern(name), "-test.count=1")
		cmd.Env = append(os.Environ(), envChild+"=1", envOut+"="+out, envVals+"="+string(vals))
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, &log
	}

	first, _ := startChild()
	WaitFor(t, f.Timeout, "the child's source to take a first message", func() bool {
		h.Publish(t, probe())
		return numbers().has(-1, 0)
	})
	rs := newReadings()
	half := f.Messages / 2
	h.Publish(t, rs.span(0, half))
	WaitFor(t, f.Timeout, "a quarter of the messages", func() bool { return len(numbers().n) > f.Messages/4 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	killedAt := len(numbers().n)
	h.Publish(t, rs.span(half, f.Messages))

	second, log := startChild()
	WaitFor(t, f.Timeout, "every message after the restart", func() bool { return numbers().has(0, f.Messages) })
	_ = second.Process.Signal(syscall.SIGTERM)
	_ = second.Wait()
	got := numbers()
	if missing := got.missing(0, f.Messages); len(missing) > 0 {
		t.Fatalf("messages lost, among them %v; child: %s", missing, log)
	}
	dups := 0
	for n := range f.Messages {
		dups += got.n[n] - 1
	}
	t.Logf("killed with %d of %d messages recorded; %d duplicates after the restart", killedAt, f.Messages, dups)
}

// runPattern returns the -test.run pattern that runs the test named name
// and, of its subtests, only the path to it.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// runChild plays the child process of KillMidStream: it runs the
// harness's source into a file, each reading written before it is
// acknowledged, until it is killed or terminated.
func runChild(t *testing.T, h SourceHarness) {
	f, err := os.OpenFile(os.Getenv(envOut), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	r := start(t, func(topo *topology.Topology) {
		topo.AddSource("source", topology.Single(h.NewSource(t)), topology.SourceConfig{})
		topo.AddBolt("record", operation.Stateless(recorder{f}), topology.BoltConfig{Buffer: buffer}).
			Input("source", topology.Global())
	})
	<-ctx.Done()
	r.stop(t)
}
