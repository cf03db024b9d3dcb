package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/cluster"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/natstest"
)

// livePipeline is an MQTT feed on two workers: the source's two
// instances share the subscription, a filter spreads the readings by
// sensor over two instances, and one sink writes them all. The buffers'
// idle timeout is short, so that the last readings come out soon after
// the feed stops, and late readings pass: after a move, the readings a
// dead worker's session kept come after newer ones.
const livePipeline = `sources:
  - name: sensors
    parallelism: 2
    mqtt:
      broker: %s
      topics: ["$share/%s/sensors/#"]
      qos: 1
      mode: tree
      payload: {format: lp}
bolts:
  - name: keep
    input: {from: sensors, grouping: fields, fields: [sensor]}
    parallelism: 2
    window: 100ms
    idle_timeout: 1s
    late: pass
    op: {type: filter, fieldpass: [seq]}
  - name: out
    input: {from: keep, grouping: global}
    window: 100ms
    idle_timeout: 1s
    late: pass
    sink: {file: "-", precision: ns}
`

// seqField finds a reading's number in the sink's output.
var seqField = regexp.MustCompile(`seq=(\d+)i`)

// startLive starts a broker and a 3-node cluster, and writes livePipeline
// for them, named after prefix, to a file. A session whose instance moves
// queues its share of the feed until another worker takes it over: the
// broker queues more than a stock one's 1000 messages.
func startLive(t *testing.T, prefix string) (broker *mosquittotest.Broker, c *natstest.Cluster, name, file string) {
	t.Helper()
	broker = mosquittotest.Start(t, mosquittotest.Config{MaxQueued: 100000})
	c = natstestCluster(t)
	name = fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	file = filepath.Join(t.TempDir(), "live.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, livePipeline, broker.URL(), name), 0o600))
	return broker, c, name, file
}

// connectPublisher connects the client that publishes the readings.
func connectPublisher(t *testing.T, broker, id string) paho.Client {
	t.Helper()
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker).SetClientID(id))
	tok := pub.Connect()
	require.True(t, tok.WaitTimeout(10*time.Second))
	require.NoError(t, tok.Error())
	t.Cleanup(func() { pub.Disconnect(100) })
	return pub
}

// publishReading publishes reading i, spreading the readings over eight
// sensors, and reports whether the broker took it.
func publishReading(t *testing.T, pub paho.Client, i int) bool {
	line := fmt.Sprintf("reading,sensor=s%d seq=%di %d", i%8, i, time.Now().UnixNano())
	tok := pub.Publish(fmt.Sprintf("sensors/s%d", i%8), 1, false, line)
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Errorf("publishing reading %d: %v", i, tok.Error())
		return false
	}
	return true
}

// readings counts the readings in the sinks' outputs by number.
func readings(outs ...*lockedBuffer) map[int]int {
	counts := map[int]int{}
	for _, out := range outs {
		for _, m := range seqField.FindAllStringSubmatch(out.String(), -1) {
			i, _ := strconv.Atoi(m[1])
			counts[i]++
		}
	}
	return counts
}

// requireReadings checks that counts has every reading of n, and no
// other, and returns the copies beyond one of each.
func requireReadings(t *testing.T, counts map[int]int, n int) (copies int) {
	t.Helper()
	for i := range n {
		require.Positive(t, counts[i], "reading %d", i)
		copies += counts[i] - 1
	}
	require.Len(t, counts, n, "nothing but the readings published")
	return copies
}

// startSharing starts two worker processes, w1 and w2, with the rebalance
// delay given, once the stream and buckets were made, so that they start
// together, and waits until each leases one instance of the source. It
// returns a connection to read the status with.
func startSharing(t *testing.T, c *natstest.Cluster, name, file string, rebalanceDelay time.Duration) (*nats.Conn, []*process) {
	t.Helper()
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = cluster.Join(ctx, nc, testConfig(name, "setup"))
	require.NoError(t, err)
	procs := []*process{startProcessWith(t, c.URL(), file, name, "w1", rebalanceDelay), startProcessWith(t, c.URL(), file, name, "w2", rebalanceDelay)}
	require.Eventually(t, func() bool {
		st := status(t, nc, name)
		return len(st.Leases) == 2 && st.Leases["source.sensors.0"] != st.Leases["source.sensors.1"]
	}, 30*time.Second, 50*time.Millisecond, "each worker leases one instance of the source")
	return nc, procs
}

// feedPublisher publishes readings in the background.
type feedPublisher struct {
	// published tells the number of each reading the broker took, and is
	// closed after the last.
	published <-chan int
	sent      atomic.Int64
}

// publishFeed publishes readings 0 to n-1, one a millisecond, under the
// client id id, until the test ends.
func publishFeed(t *testing.T, broker, id string, n int) *feedPublisher {
	t.Helper()
	pub := connectPublisher(t, broker, id)
	published := make(chan int, n)
	f := &feedPublisher{published: published}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	wg.Go(func() {
		defer close(published)
		for i := range n {
			if !publishReading(t, pub, i) {
				return
			}
			f.sent.Add(1)
			published <- i
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	return f
}

// awaitPublished returns once reading i was published, or publishing
// ended.
func (f *feedPublisher) awaitPublished(i int) {
	for j := range f.published {
		if j == i {
			return
		}
	}
}

// Live MQTT: an MQTT source whose two instances, leased by two workers,
// share a subscription. Mid-feed, one worker loses its lease (the test
// deletes it, as when a worker cannot renew it) and takes it again, as a
// new holding; then it is killed (SIGKILL). The survivor takes the lease
// over and resumes the dead instance's broker session, with the messages
// it had queued and those sent and not acknowledged, and every reading
// published comes out. Copies are counted and reported: messages the
// broker sent again, whose particles had reached JetStream before the
// kill, and the output of a sink that moved, which writes again what the
// dead worker wrote and had not acknowledged.
func TestLiveFeedSurvivesAKilledWorker(t *testing.T) {
	broker, c, name, file := startLive(t, "live")
	// Each worker holds one instance, so the feed is spread.
	nc, procs := startSharing(t, c, name, file, time.Hour)
	const n = 3000
	feed := publishFeed(t, broker.URL(), name+"-pub", n)
	seen := func() map[int]int { return readings(&procs[0].out, &procs[1].out) }
	feed.awaitPublished(n / 5)
	require.Eventually(t, func() bool { return len(seen()) >= n/10 }, 30*time.Second, 20*time.Millisecond, "readings come out")
	// The worker running the sink loses its lease (deleted here, as if
	// it could not renew it), then takes it again, and is killed: its
	// source instance, the filter instances it runs and the sink move.
	var killed, survivor *process
	require.Eventually(t, func() bool {
		for _, w := range status(t, nc, name).Workers {
			if slices.Contains(w.Units, jetstreamedge.ConsumerName("out", 0)) {
				for _, p := range procs {
					if p.name == w.Worker {
						killed = p
					} else {
						survivor = p
					}
				}
			}
		}
		return killed != nil && survivor != nil
	}, 10*time.Second, 20*time.Millisecond, "a worker runs the sink")
	var lease string
	for k, holder := range status(t, nc, name).Leases {
		if holder == killed.name {
			lease = k
		}
	}
	require.NotEmpty(t, lease, "the killed worker holds an instance of the source")
	holding := func(holder string, n int) func() bool {
		return func() bool {
			var report strings.Builder
			st := status(t, nc, name)
			require.NoError(t, st.Write(&report))
			return regexp.MustCompile(regexp.QuoteMeta(lease) + `\s+read by ` + holder + `, holding ` + strconv.Itoa(n) + `\n`).MatchString(report.String())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases, err := jetstream.New(nc)
	require.NoError(t, err)
	kv, err := leases.KeyValue(ctx, "sensorstorm_"+jetstreamedge.Token(name)+"_leases")
	require.NoError(t, err)
	require.NoError(t, kv.Delete(ctx, lease))
	require.Eventually(t, holding(killed.name, 2), 30*time.Second, 50*time.Millisecond, "the worker that lost the lease takes it again")
	feed.awaitPublished(n / 2)
	at := feed.sent.Load()
	require.NoError(t, killed.cmd.Process.Signal(syscall.SIGKILL))
	<-killed.done
	t.Logf("killed %s, running the sink and holding %s, after %d readings published", killed.name, lease, at)
	require.Less(t, at, int64(n), "killed mid-feed")
	require.Eventually(t, holding(survivor.name, 3), 30*time.Second, 50*time.Millisecond, "the survivor takes the dead worker's instance over")
	feed.awaitPublished(n - 1)

	for deadline := time.Now().Add(60 * time.Second); len(seen()) < n; time.Sleep(100 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "%d readings of %d came out", len(seen()), n)
	}
	require.NoError(t, survivor.cmd.Process.Signal(syscall.SIGTERM))
	<-survivor.done
	copies := requireReadings(t, seen(), n)
	st := status(t, nc, name)
	t.Logf("%d readings, %d copies (messages the broker sent again, batches a moved unit received again); leases now %v",
		n, copies, st.Leases)
}

// A worker that joins a live feed takes its share of the source's
// instances: the first worker, alone, leases both; once the second joined
// and the rebalance delay passed, the first stops one instance, waits until
// JetStream confirmed what it emitted, so that the broker has its
// acknowledgements, disconnects and frees the lease, and the second
// connects with the instance's client id and receives what the session
// kept meanwhile. Every reading published comes out; copies are counted.
// The bolt instances stay on the first worker (its transport owns every
// unit, the other's none): this test is about leases, TestJoiningWorkerTakesItsShare
// about units.
func TestJoiningWorkerTakesAFeedInstance(t *testing.T) {
	broker, c, name, file := startLive(t, "livejoin")
	config := func(worker string, owns bool) cluster.Config {
		cfg := testConfig(name, worker)
		cfg.Edges.Owns = func(string, bool) bool { return owns }
		return cfg
	}
	first := startWorkerWith(t, c, file, config("w1", true))
	first.run()
	workers := []*clusterWorker{first}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	leases := func() map[string]string { return status(t, first.nc, name).Leases }
	require.Eventually(t, func() bool {
		l := leases()
		return len(l) == 2 && l["source.sensors.0"] == "w1" && l["source.sensors.1"] == "w1"
	}, 30*time.Second, 50*time.Millisecond, "the first worker, alone, leases both instances")

	pub := connectPublisher(t, broker.URL(), name+"-pub")
	var (
		sent       atomic.Int64
		publishing sync.WaitGroup
	)
	stopPublishing := make(chan struct{})
	publishing.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stopPublishing:
				return
			case <-time.After(time.Millisecond):
			}
			if !publishReading(t, pub, i) {
				return
			}
			sent.Add(1)
		}
	})
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(stopPublishing)
			publishing.Wait()
		}
	}
	defer stop()
	// The bolt instances, the sink among them, stay on the first worker.
	seen := func() map[int]int { return readings(&first.out) }
	require.Eventually(t, func() bool { return len(seen()) >= 300 }, 30*time.Second, 20*time.Millisecond, "readings come out")

	joined := sent.Load()
	second := startWorkerWith(t, c, file, config("w2", false))
	second.run()
	workers = append(workers, second)
	var moved string
	require.Eventually(t, func() bool {
		for k, holder := range leases() {
			if holder == "w2" {
				moved = k
			}
		}
		return moved != ""
	}, 30*time.Second, 50*time.Millisecond, "the second worker takes an instance")
	at := sent.Load()
	// The feed goes on through both instances for a while.
	require.Eventually(t, func() bool { return sent.Load() >= at+500 }, 30*time.Second, 20*time.Millisecond)
	stop()
	n := int(sent.Load())
	t.Logf("w2 joined after %d readings published, took %s after %d; %d published in all", joined, moved, at, n)

	deadline := time.Now().Add(60 * time.Second)
	for len(seen()) < n {
		require.True(t, time.Now().Before(deadline), "%d readings of %d came out", len(seen()), n)
		time.Sleep(100 * time.Millisecond)
	}
	// The status tells who holds what: each worker announces the lease it
	// holds (announcements are renewed every third of the lease TTL).
	var st cluster.Status
	require.Eventually(t, func() bool {
		st = status(t, first.nc, name)
		if len(st.Workers) != 2 {
			return false
		}
		for _, a := range st.Workers {
			var held []string
			for k, holder := range st.Leases {
				if holder == a.Worker {
					held = append(held, k)
				}
			}
			if len(held) != 1 || !slices.Equal(held, a.Leases) {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "each worker holds one lease and announces it")
	var report strings.Builder
	require.NoError(t, st.Write(&report))
	t.Log("\n" + report.String())
	require.Equal(t, "w2", st.Leases[moved], "the instance handed over stays with the second worker")
	require.Equal(t, "2", st.Holdings[moved], "one hand-over: two holdings")
	require.Positive(t, second.w.Transport().Stats().PublishedParticles.Load(), "the second worker's instance read the feed")

	copies := requireReadings(t, seen(), n)
	t.Logf("%d readings, %d copies", n, copies)
}

// A worker stopped with SIGTERM hands its share over before it exits:
// two worker processes share an MQTT source's two instances and the bolt
// instances; mid-feed, the one not running the sink is stopped. It hands
// its instance over as to a worker that joined (it stops taking messages,
// waits until JetStream confirmed what it emitted, disconnects keeping the
// session, frees the lease) and its units (gives back what it had not
// finished, unpins), and exits 0; the other takes them at once. Every
// reading published comes out, and none twice: the broker has the
// acknowledgements of everything the stopped worker emitted, and the
// filter instances that moved derive the identities their predecessor
// gave, which the sink's receiver drops.
func TestStoppedWorkerHandsItsShareOver(t *testing.T) {
	broker, c, name, file := startLive(t, "liveleave")
	// A short rebalance delay: the units spread before the feed starts.
	nc, procs := startSharing(t, c, name, file, time.Second)
	sink := jetstreamedge.ConsumerName("out", 0)
	var stopped, survivor *process
	require.Eventually(t, func() bool {
		st := status(t, nc, name)
		if len(st.Workers) != 2 {
			return false
		}
		stopped, survivor = nil, nil
		for _, a := range st.Workers {
			// Each holds its own units and only those: the sink does not
			// move while the feed runs, before the stop.
			if len(a.Assigned) == 0 || !slices.Equal(a.Held, a.Assigned) {
				return false
			}
			for _, p := range procs {
				switch {
				case p.name != a.Worker:
				case slices.Contains(a.Assigned, sink):
					survivor = p
				default:
					stopped = p
				}
			}
		}
		return stopped != nil && survivor != nil
	}, 30*time.Second, 50*time.Millisecond, "each worker holds the units assigned to it, one of them the sink")
	var lease string
	for k, holder := range status(t, nc, name).Leases {
		if holder == stopped.name {
			lease = k
		}
	}

	const n = 3000
	feed := publishFeed(t, broker.URL(), name+"-pub", n)
	seen := func() map[int]int { return readings(&procs[0].out, &procs[1].out) }
	feed.awaitPublished(n / 5)
	require.Eventually(t, func() bool { return len(seen()) >= n/10 }, 30*time.Second, 20*time.Millisecond, "readings come out")
	require.Eventually(t, func() bool {
		for _, a := range status(t, nc, name).Workers {
			if a.Worker == stopped.name {
				return len(a.Units) > 0
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the worker to stop runs units")
	feed.awaitPublished(n / 2)
	at, start := feed.sent.Load(), time.Now()
	require.NoError(t, stopped.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-stopped.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop", stopped.name)
	}
	t.Logf("stopped %s, holding %s, after %d readings published; it exited after %s", stopped.name, lease, at, time.Since(start).Round(time.Millisecond))
	require.NoError(t, stopped.err, "the stopped worker exits 0")
	require.Contains(t, stopped.errs.String(), "worker: handed over", "the stopped worker handed everything over")
	require.Less(t, at, int64(n), "stopped mid-feed")
	require.Eventually(t, func() bool {
		st := status(t, nc, name)
		return st.Leases[lease] == survivor.name && st.Holdings[lease] == "2"
	}, 30*time.Second, 50*time.Millisecond, "the survivor takes the instance handed over")
	feed.awaitPublished(n - 1)

	for deadline := time.Now().Add(60 * time.Second); len(seen()) < n; time.Sleep(100 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "%d readings of %d came out", len(seen()), n)
	}
	require.NoError(t, survivor.cmd.Process.Signal(syscall.SIGTERM))
	<-survivor.done
	require.NoError(t, survivor.err)
	copies := requireReadings(t, seen(), n)
	t.Logf("%d readings, %d copies", n, copies)
	require.Zero(t, copies, "no reading comes out twice")
}
