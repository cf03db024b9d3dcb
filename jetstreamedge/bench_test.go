package jetstreamedge_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/natstest"
	"github.com/sensorstorm/sensorstorm/topology"
)

// timingFeed completes every batch at once and records how long each took
// from Send, by its first particle's sequence number.
type timingFeed struct {
	mu        sync.Mutex
	sent      map[uint64]time.Time
	latencies []time.Duration
	particles int
	want      int
	all       chan struct{}
}

func (f *timingFeed) Deliver(_ context.Context, b *topology.RemoteBatch, done func(error)) error {
	now := time.Now()
	f.mu.Lock()
	if len(b.Items) > 0 {
		seq := b.Items[0].Particle.Seq
		f.latencies = append(f.latencies, now.Sub(f.sent[seq]))
		delete(f.sent, seq)
	}
	f.particles += len(b.Items)
	if f.particles == f.want {
		close(f.all)
	}
	f.mu.Unlock()
	done(nil)
	return nil
}

func (f *timingFeed) sending(seq uint64) {
	f.mu.Lock()
	f.sent[seq] = time.Now()
	f.mu.Unlock()
}

// BenchmarkHop sends the test recording, in batches of 256, across one
// hop between two workers of a JetStream cluster: published, stored,
// delivered to a pinned pull consumer and acknowledged. It reports the
// particles per second, the bytes per particle on the wire and the
// latency of a batch from Send to delivery.
func BenchmarkHop(b *testing.B) {
	ps := jetstreamedge.Recording(b)
	for _, c := range []struct{ nodes, replicas int }{{1, 1}, {3, 3}} {
		b.Run(fmt.Sprintf("nodes=%d,replicas=%d", c.nodes, c.replicas), func(b *testing.B) {
			const batch = 256
			n := (len(ps) / batch) * batch
			from, out, feed := startHop(b, c.nodes, c.replicas, n*b.N)
			ctx := context.Background()
			var seq uint64
			rb := topology.RemoteBatch{Items: make([]topology.RemoteItem, batch)}
			b.ResetTimer()
			for range b.N {
				for i := 0; i+batch <= len(ps); i += batch {
					for j := range batch {
						seq++
						p := ps[i+j]
						p.Origin, p.Seq = 1, seq
						rb.Items[j] = topology.RemoteItem{Particle: p, High: p.Time}
					}
					feed.sending(rb.Items[0].Particle.Seq)
					if err := out.Send(ctx, &rb, func(error) {}); err != nil {
						b.Fatal(err)
					}
				}
			}
			<-feed.all
			b.StopTimer()
			slices.Sort(feed.latencies)
			st := from.Stats()
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "particles/s")
			b.ReportMetric(float64(st.PublishedBytes.Load())/float64(st.PublishedParticles.Load()), "B/particle")
			b.ReportMetric(float64(feed.latencies[len(feed.latencies)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(feed.latencies[len(feed.latencies)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkHopLatency sends the test recording across one hop at low
// load, 10k particles/s in batches of 100, and reports the latency of a
// batch from Send to delivery: the hop's own cost, without queueing.
func BenchmarkHopLatency(b *testing.B) {
	ps := jetstreamedge.Recording(b)
	const (
		batch = 100
		rate  = 10_000 // particles/s
	)
	for _, c := range []struct{ nodes, replicas int }{{1, 1}, {3, 3}} {
		b.Run(fmt.Sprintf("nodes=%d,replicas=%d", c.nodes, c.replicas), func(b *testing.B) {
			_, out, feed := startHop(b, c.nodes, c.replicas, batch*b.N)
			ctx := context.Background()
			var seq uint64
			rb := topology.RemoteBatch{Items: make([]topology.RemoteItem, batch)}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				time.Sleep(time.Until(start.Add(time.Duration(i) * batch * time.Second / rate)))
				for j := range batch {
					seq++
					p := ps[int(seq)%len(ps)]
					p.Origin, p.Seq = 1, seq
					rb.Items[j] = topology.RemoteItem{Particle: p, High: p.Time}
				}
				feed.sending(rb.Items[0].Particle.Seq)
				if err := out.Send(ctx, &rb, func(error) {}); err != nil {
					b.Fatal(err)
				}
			}
			<-feed.all
			b.StopTimer()
			slices.Sort(feed.latencies)
			b.ReportMetric(float64(feed.latencies[len(feed.latencies)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(feed.latencies[len(feed.latencies)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// startHop starts a cluster of nodes and a hop across it, between two
// workers' transports, into a feed that expects want particles. It
// returns the sending transport and its outlet.
func startHop(b *testing.B, nodes, replicas, want int) (*jetstreamedge.Transport, topology.Outlet, *timingFeed) {
	cl := natstest.StartCluster(b, nodes)
	cfg := jetstreamedge.Config{Pipeline: fmt.Sprintf("hop-%d", replicas), Replicas: replicas}
	from, to := benchWorker(b, cl, cfg), benchWorker(b, cl, cfg)
	out, _, _ := from.Edge("sink", 0)
	_, in, _ := to.Edge("sink", 0)
	feed := &timingFeed{sent: map[uint64]time.Time{}, want: want, all: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = in.Run(ctx, feed) })
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return from, out, feed
}

func benchWorker(b *testing.B, c *natstest.Cluster, cfg jetstreamedge.Config) *jetstreamedge.Transport {
	nc, err := nats.Connect(c.URL())
	require.NoError(b, err)
	b.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t, err := jetstreamedge.New(ctx, nc, cfg)
	require.NoError(b, err)
	return t
}
