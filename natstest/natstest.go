// Package natstest starts NATS servers with JetStream inside a test:
// a real cluster on loopback, on ports picked at random, with its storage
// in the test's temporary directory, shut down when the test ends.
//
// # What it is not
//
// Not a mock: the servers are github.com/nats-io/nats-server/v2, the same
// code as a deployed server. Not for production: the cluster has no
// authentication and listens on 127.0.0.1 only.
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyWithin is how long a server may take to accept connections and
// its cluster to elect a JetStream leader.
const readyWithin = 20 * time.Second

// Cluster is a JetStream cluster of servers on loopback.
type Cluster struct {
	tb      testing.TB
	opts    []*server.Options
	servers []*server.Server
}

// StartCluster starts n servers (n >= 1) routed to each other as one
// JetStream cluster and waits until it has a leader. It fails the test
// with a clear message when a server does not start.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c := &Cluster{tb: tb, servers: make([]*server.Server, n)}
	routePorts := make([]int, n)
	for i := range routePorts {
		routePorts[i] = freePort(tb)
	}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			NoLog:      true,
			NoSigs:     true,
		}
		if n > 1 {
			o.Cluster = server.ClusterOpts{Name: "sensorstorm-test", Host: "127.0.0.1", Port: routePorts[i]}
			for j, p := range routePorts {
				if j != i {
					o.Routes = append(o.Routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
				}
			}
		}
		c.opts = append(c.opts, o)
	}
	tb.Cleanup(c.shutdown)
	for i := range n {
		c.Start(i)
	}
	c.WaitReady()
	return c
}

// freePort returns a loopback port that was free a moment ago: routes
// must be known before the servers start.
func freePort(tb testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("natstest: no free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start starts server i, which must be stopped, on its previous ports and
// storage once it ran before.
func (c *Cluster) Start(i int) {
	c.tb.Helper()
	first := c.opts[i].Port == server.RANDOM_PORT
	for attempt := 1; ; attempt++ {
		s, err := server.NewServer(c.opts[i])
		if err != nil {
			c.tb.Fatalf("natstest: server %d: %v", i, err)
		}
		log := &errorLog{}
		s.SetLogger(log, false, false)
		s.Start()
		if ready(s, log) {
			// A restart keeps its client port, so that clients reconnect.
			c.opts[i].Port = s.Addr().(*net.TCPAddr).Port
			c.servers[i] = s
			return
		}
		s.Shutdown()
		if !first || c.opts[i].Cluster.Port == 0 || attempt == 3 {
			c.tb.Fatalf("natstest: server %d did not accept connections within %s: %s", i, readyWithin, log)
		}
		// The route port was free when it was picked; another process
		// may have taken it since. The other servers reach this one all
		// the same: it dials them.
		c.tb.Logf("natstest: server %d did not start (%s); again on another route port", i, log)
		c.opts[i].Cluster.Port = freePort(c.tb)
	}
}

// ready waits until s accepts connections, for up to readyWithin, and
// reports whether it does; it gives up at once when s could not listen.
func ready(s *server.Server, log *errorLog) bool {
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		if s.ReadyForConnections(100 * time.Millisecond) {
			return true
		}
		if strings.Contains(log.String(), "Error listening") {
			return false
		}
	}
	return false
}

// errorLog keeps the errors a server logs, for the failure of a test it
// did not start in.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

// keep keeps the line, and the 20 before it: a server that runs on logs
// routes coming and going.
func (l *errorLog) keep(format string, v []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 21 {
		l.lines = append(l.lines[:0], l.lines[1:]...)
	}
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}

func (l *errorLog) Noticef(string, ...any)         {}
func (l *errorLog) Warnf(format string, v ...any)  { l.keep(format, v) }
func (l *errorLog) Fatalf(format string, v ...any) { l.keep(format, v) }
func (l *errorLog) Errorf(format string, v ...any) { l.keep(format, v) }
func (l *errorLog) Debugf(string, ...any)          {}
func (l *errorLog) Tracef(string, ...any)          {}

// String returns the errors kept, or says there were none.
func (l *errorLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return "no error logged"
	}
	return strings.Join(l.lines, "; ")
}

// Stop shuts server i down and waits until it has stopped.
func (c *Cluster) Stop(i int) {
	if s := c.servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.servers[i] = nil
	}
}

func (c *Cluster) shutdown() {
	for i := range c.servers {
		c.Stop(i)
	}
}

// WaitReady waits until every running server sees a JetStream leader and
// is current with it, and the leader can place streams on all of them.
func (c *Cluster) WaitReady() {
	c.tb.Helper()
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		if c.ready() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.tb.Fatalf("natstest: no JetStream leader within %s", readyWithin)
}

func (c *Cluster) ready() bool {
	leader, running := false, 0
	for _, s := range c.servers {
		if s != nil {
			running++
		}
	}
	for _, s := range c.servers {
		if s == nil {
			continue
		}
		if len(c.servers) == 1 {
			return true
		}
		if !s.JetStreamIsCurrent() {
			return false
		}
		// A leader places streams only on peers it has current stats
		// from: before it has them all, a stream with replicas 3 fails
		// with "no suitable peers for placement".
		if s.JetStreamIsLeader() {
			leader = len(s.JetStreamClusterPeers()) == running
		}
	}
	return leader
}

// URL returns the client URLs of the running servers, comma-separated as
// nats.Connect takes them.
func (c *Cluster) URL() string {
	var urls []string
	for i, s := range c.servers {
		if s != nil {
			urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port))
		}
	}
	return strings.Join(urls, ",")
}
