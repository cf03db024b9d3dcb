package jetstreamedge_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/jetstreamedge"
	"github.com/sensorstorm/sensorstorm/natstest"
)

// stallingProxy forwards TCP connections to a server and can stop
// forwarding while they stay open: a network partition, which a client
// notices only as confirmations that do not come.
type stallingProxy struct {
	ln    net.Listener
	gate  sync.RWMutex // held for writing while stalled
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startStallingProxy(t *testing.T, server string) *stallingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallingProxy{ln: ln}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", server)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Go(func() { p.forward(s, c) })
			p.wg.Go(func() { p.forward(c, s) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// forward copies from src to dst, holding back while the proxy stalls.
func (p *stallingProxy) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate.RLock()
			_, werr := dst.Write(buf[:n])
			p.gate.RUnlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

func (p *stallingProxy) addr() string { return p.ln.Addr().String() }

// Publishes that time out while the connection stays up (a partition,
// not a closed connection) are tried again once it heals, while Send
// goes on: nats.go reports such a timeout holding the lock that
// PublishMsgAsync takes, and the outlet, which publishes holding its own
// lock, took that lock in the report too, so that the two deadlocked and
// the senders' batches never completed.
func TestPublishesTimingOutInAPartitionAreTriedAgain(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	proxy := startStallingProxy(t, strings.TrimPrefix(c.URL(), "nats://"))
	nc, err := nats.Connect("nats://" + proxy.addr())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := jetstreamedge.New(ctx, nc, jetstreamedge.Config{Pipeline: "partition", PublishTimeout: 200 * time.Millisecond, MaxInFlight: 1 << 20})
	require.NoError(t, err)

	// Senders on several edges publish as fast as they can, through a
	// partition of a second, so that each edge's first timeout comes
	// while its sender publishes; a few hundred batches each, so that
	// trying them again takes seconds.
	const edges, most = 16, 300
	var sent, confirmed atomic.Int64
	failed := make(chan error, 1)
	sending, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for e := range edges {
		out, _, _ := w.Edge("b", e)
		wg.Go(func() {
			for i := uint64(1); i <= most && sending.Err() == nil; i++ {
				b := data(uint32(e+1), i)
				sent.Add(1)
				err := out.Send(context.Background(), &b, func(err error) {
					if err != nil {
						select {
						case failed <- err:
						default:
						}
					}
					confirmed.Add(1)
				})
				if err != nil {
					failed <- err
					return
				}
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // publishing before the partition
	proxy.gate.Lock()
	time.Sleep(time.Second) // the partition
	proxy.gate.Unlock()
	stuck := make(chan struct{})
	go func() {
		stop()
		wg.Wait()
		close(stuck)
	}()
	select {
	case <-stuck:
	case <-time.After(30 * time.Second):
		t.Fatalf("the senders are stuck: %d of %d batches confirmed", confirmed.Load(), sent.Load())
	}
	require.Eventually(t, func() bool { return confirmed.Load() == sent.Load() }, 30*time.Second, 10*time.Millisecond,
		"every batch confirmed")
	select {
	case err := <-failed:
		t.Fatal(err)
	default:
	}
	require.Positive(t, w.Stats().PublishFailed.Load(), "publishes timed out in the partition")
}
