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
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// timingFeed completes every batch at once, commits a checkpoint after
// every 64th, records how long each took from Send, by its first
// particle's sequence number, and gives the sender a credit back for it,
// if it counts them.
type timingFeed struct {
	releases
	unit      edge.Resumer
	mu        sync.Mutex
	sent      map[uint64]time.Time
	latencies []time.Duration
	particles int
	want      int
	all       chan struct{}
	credits   chan struct{}
}

func (f *timingFeed) Deliver(_ context.Context, b *edge.Batch, done func(error)) error {
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
	if f.credits != nil {
		<-f.credits
	}
	f.finished(b.Items)
	done(nil)
	if b.Position%64 == 0 {
		pos, err := f.unit.Position(b.Position)
		if err != nil {
			return err
		}
		f.unit.Committed(pos)
	}
	return nil
}

func (f *timingFeed) sending(seq uint64) {
	f.mu.Lock()
	f.sent[seq] = time.Now()
	f.mu.Unlock()
}

// hopWindow is how many particles a saturating sender may have sent and
// not yet seen delivered: enough to keep the hop busy, few enough that
// the latency measured is the hop's, not a queue's that grows with b.N.
const hopWindow = 1 << 14

// BenchmarkHop sends the test recording across one hop between two
// workers of a JetStream cluster: published, stored, delivered to a
// pinned pull consumer and acknowledged. An op is one batch. It reports
// the particles per second, the bytes per particle on the wire and the
// latency of a batch from Send to delivery and the CPU time per
// particle, at saturation (batches of
// 256, the engine's default, and 1024) and at a low load (10k particles
// a second in batches of 100).
func BenchmarkHop(b *testing.B) {
	ps := jetstreamedge.Recording(b)
	var seq uint64
	for _, c := range []struct{ nodes, replicas int }{{1, 1}, {3, 3}} {
		b.Run(fmt.Sprintf("nodes=%d,replicas=%d", c.nodes, c.replicas), func(b *testing.B) {
			cl := natstest.StartCluster(b, c.nodes)
			cfg := jetstreamedge.Config{Pipeline: fmt.Sprintf("bench-%d", c.replicas), Replicas: c.replicas}
			from, to := benchWorker(b, cl, cfg), benchWorker(b, cl, cfg)
			edges := 0
			for _, load := range []struct {
				batch int
				rate  float64 // particles a second; 0 saturates
			}{{256, 0}, {1024, 0}, {100, 10_000}} {
				name := fmt.Sprintf("batch=%d", load.batch)
				if load.rate > 0 {
					name += fmt.Sprintf(",rate=%g", load.rate)
				}
				b.Run(name, func(b *testing.B) {
					// A new edge every run: the consumer of the last
					// one stays pinned to its stopped pull a while.
					edges++
					bolt := fmt.Sprintf("sink%d", edges)
					out, _, _ := from.Edge(bolt, 0)
					_, in, _ := to.Edge(bolt, 0)
					window := max(1, hopWindow/load.batch)
					feed := &timingFeed{
						sent: map[uint64]time.Time{}, want: load.batch * b.N, all: make(chan struct{}),
						credits: make(chan struct{}, window), unit: in.(edge.Resumer),
					}
					require.NoError(b, feed.unit.Resume(nil))
					ctx, cancel := context.WithCancel(context.Background())
					var wg sync.WaitGroup
					wg.Go(func() { _ = in.Run(ctx, feed) })
					defer func() {
						cancel()
						wg.Wait()
					}()
					rb := edge.Batch{Items: make([]edge.Item, load.batch)}
					pub0 := from.Stats().PublishedBytes.Load()
					cpu0 := jetstreamedge.CPUTime(b)
					b.ResetTimer()
					start := time.Now()
					for i := range b.N {
						for j := range rb.Items {
							seq++
							p := ps[(i*load.batch+j)%len(ps)]
							p.Origin, p.Seq = 1, seq
							rb.Items[j] = edge.Item{Particle: p, High: p.Time}
						}
						if load.rate > 0 {
							time.Sleep(time.Until(start.Add(time.Duration(float64(i*load.batch) / load.rate * float64(time.Second)))))
						}
						feed.credits <- struct{}{}
						feed.sending(rb.Items[0].Particle.Seq)
						if err := out.Send(ctx, &rb, func(error) {}); err != nil {
							b.Fatal(err)
						}
					}
					<-feed.all
					b.StopTimer()
					cpu := jetstreamedge.CPUTime(b) - cpu0
					slices.Sort(feed.latencies)
					pub := from.Stats().PublishedBytes.Load() - pub0
					b.ReportMetric(float64(load.batch*b.N)/b.Elapsed().Seconds(), "particles/s")
					b.ReportMetric(float64(pub)/float64(load.batch*b.N), "B/particle")
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(load.batch*b.N), "cpu-ns/particle")
					b.ReportMetric(float64(feed.latencies[len(feed.latencies)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(feed.latencies[len(feed.latencies)*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
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
