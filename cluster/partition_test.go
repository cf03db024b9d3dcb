package cluster_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/internal/netnstest"
)

// natsEnv makes the test binary a NATS server with JetStream: TestMain
// runs natsProcess with the settings in the variable,
// "NAME|HOST|STORE|ROUTE_HOST,ROUTE_HOST...", until SIGTERM.
const natsEnv = "SENSORSTORM_TEST_NATS"

// The ports of the NATS servers in namespaces: each namespace has an
// address of its own.
const (
	natsClientPort = 4222
	natsRoutePort  = 6222
)

// natsProcess runs one node of a JetStream cluster, listening on HOST
// only, routed to the other hosts, until SIGTERM.
func natsProcess(settings string) int {
	parts := strings.Split(settings, "|")
	if len(parts) != 4 {
		fmt.Fprintln(os.Stderr, "nats: bad settings", settings)
		return 2
	}
	name, host, store := parts[0], parts[1], parts[2]
	o := &server.Options{
		ServerName: name, Host: host, Port: natsClientPort, JetStream: true, StoreDir: store, NoSigs: true, NoLog: true,
		Cluster: server.ClusterOpts{Name: "sensorstorm-netns", Host: host, Port: natsRoutePort},
	}
	for _, h := range strings.Split(parts[3], ",") {
		o.Routes = append(o.Routes, &url.URL{Scheme: "nats", Host: net.JoinHostPort(h, strconv.Itoa(natsRoutePort))})
	}
	term, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s, err := server.NewServer(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nats:", err)
		return 1
	}
	s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		fmt.Fprintln(os.Stderr, "nats: not ready for connections")
		return 1
	}
	<-term.Done()
	s.Shutdown()
	s.WaitForShutdown()
	return 0
}

// netnsCluster is a JetStream cluster of NATS server processes, one per
// machine of a network.
type netnsCluster struct {
	machines []*netnstest.Machine
	procs    []*process
}

// URL returns the client URLs of the servers, comma-separated.
func (c *netnsCluster) URL() string {
	urls := make([]string, len(c.machines))
	for i, m := range c.machines {
		urls[i] = fmt.Sprintf("nats://%s:%d", m.Addr, natsClientPort)
	}
	return strings.Join(urls, ",")
}

// startNetnsCluster starts a NATS server in each machine, routed to the
// others, and waits until JetStream answers.
func startNetnsCluster(t *testing.T, machines []*netnstest.Machine) *netnsCluster {
	t.Helper()
	c := &netnsCluster{machines: machines}
	for i, m := range machines {
		var routes []string
		for j, o := range machines {
			if j != i {
				routes = append(routes, o.Addr)
			}
		}
		settings := strings.Join([]string{fmt.Sprintf("n%d", i+1), m.Addr, t.TempDir(), strings.Join(routes, ",")}, "|")
		c.procs = append(c.procs, startIn(t, m, fmt.Sprintf("nats n%d", i+1), natsEnv+"="+settings))
	}
	var nc *nats.Conn
	require.Eventually(t, func() bool {
		var err error
		nc, err = nats.Connect(c.URL())
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "the NATS servers accept connections")
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// A stream with three replicas is placed once every node is
		// known to the leader.
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "READY", Subjects: []string{"ready"}, Replicas: 3, Storage: jetstream.MemoryStorage})
		return err == nil
	}, 60*time.Second, 200*time.Millisecond, "the JetStream cluster places a stream on its three nodes")
	return c
}

// startIn starts the test binary in machine m with the variables env
// set, as a process named name.
func startIn(t *testing.T, m *netnstest.Machine, name string, env ...string) *process {
	t.Helper()
	cmd := m.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return startCmd(t, cmd, name)
}

// startWorkerIn starts a worker process in machine m. It starts its
// pipeline once it sees two workers, so that the units are assigned
// among both from the start, and they stay with the first worker that
// pulls for them afterwards (the tests of partitions are not about
// hand-overs).
func startWorkerIn(t *testing.T, m *netnstest.Machine, url, file, pipelineName, name string, env ...string) *process {
	t.Helper()
	env = append(env, workerEnv+"="+strings.Join([]string{url, file, pipelineName, name, time.Hour.String()}, "|"), waitWorkersEnv+"=2")
	return startIn(t, m, name, env...)
}

// pacedToFiles writes to dir the paced pipeline with its sink writing
// out.lp there (on a cluster, a file per worker, which a sink that moves
// continues: each line once, where standard output writes again what came
// after a restored checkpoint), and returns the pipeline's file.
func pacedToFiles(t *testing.T, dir string) string {
	t.Helper()
	recording, err := filepath.Abs("../testdata/library1-r1.lp")
	require.NoError(t, err)
	spec := readFile(t, "testdata/library1-mean-paced.yaml")
	for old, repl := range map[string]string{
		"[../../testdata/library1-r1.lp]": fmt.Sprintf("[%q]", recording),
		`sink: {file: "-", precision: s}`: fmt.Sprintf("sink: {file: %q, precision: s}", filepath.Join(dir, "out.lp")),
	} {
		require.Contains(t, spec, old)
		spec = strings.Replace(spec, old, repl, 1)
	}
	file := filepath.Join(dir, "paced.yaml")
	require.NoError(t, os.WriteFile(file, []byte(spec), 0o644))
	return file
}

// fileLines counts the lines of the files the workers' sinks wrote in dir.
func fileLines(t *testing.T, dir string) int {
	files, err := filepath.Glob(filepath.Join(dir, "out.*.lp"))
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += strings.Count(string(b), "\n")
	}
	return n
}

// fenced tells whether worker p logged that it fenced itself off.
func fenced(p *process) bool { return strings.Contains(p.errs.String(), "fencing the worker off") }

// A worker cut off from NATS for longer than its lease, then reconnected:
// the worker holding the recording's lease, or one holding units only.
// Workers and NATS nodes run in network namespaces, one a machine; the
// cut is the machine's link down, which leaves its connections silent
// rather than closed. The cut worker fences itself off half a lease TTL
// after its last announcement, before the other takes the lease and its
// units: it publishes and acknowledges nothing from then on, and its
// units start afresh, so that no window fires with a part of its inputs
// and nothing it buffered reaches the stream as new. Reconnected, it
// rejoins without state, and both end: the output is the single-process
// one.
func TestWorkerCutOffLongerThanLease(t *testing.T) {
	want := lines(singleProcess(t, threeStages))
	for _, cut := range []string{"lease holder", "units only"} {
		t.Run(cut, func(t *testing.T) {
			dir := t.TempDir()
			paced := pacedToFiles(t, dir)
			nw := netnstest.New(t, 5)
			c := startNetnsCluster(t, nw.Machines[:3])
			name := fmt.Sprintf("cut-%d", time.Now().UnixNano())
			nc, err := nats.Connect(c.URL())
			require.NoError(t, err)
			defer nc.Close()
			procs := []*process{startWorkerIn(t, nw.Machines[3], c.URL(), paced, name, "w1")}
			require.Eventually(t, func() bool { _, ok := entry(nc, name, "workers", "w1"); return ok }, 60*time.Second, 20*time.Millisecond)
			procs = append(procs, startWorkerIn(t, nw.Machines[4], c.URL(), paced, name, "w2"))
			require.Eventually(t, func() bool { return fileLines(t, dir) >= len(want)/4 }, 90*time.Second, 10*time.Millisecond,
				"the replay makes progress")
			holder, _ := entry(nc, name, "leases", "source.wsn.0")
			if holder == "" {
				holder = leaseHolder(procs, "source.wsn.0")
			}
			i := slices.IndexFunc(procs, func(p *process) bool { return p.name == holder })
			require.NotEqual(t, -1, i, "the lease holder %q is a worker", holder)
			if cut == "units only" {
				i = 1 - i
			}
			m := nw.Machines[3+i]
			lease := 3 * time.Second // testConfig's
			m.Cut(t)
			t.Logf("cut %s off (holder %s) after %d lines", procs[i].name, holder, fileLines(t, dir))
			time.Sleep(3 * lease)
			m.Restore(t)
			t.Logf("reconnected %s after %d lines", procs[i].name, fileLines(t, dir))
			awaitProcesses(t, 3*time.Minute, procs...)
			require.True(t, fenced(procs[i]), "the cut worker fenced itself off")
			requireSameLines(t, want, workerFiles(t, dir))
		})
	}
}

// The NATS node leading the pipeline's stream cut off mid-run and
// reconnected, in a 3-node JetStream cluster whose nodes and workers run
// in network namespaces of their own, one a machine, the workers
// connected to any node: the stream and buckets (3 replicas) elect other
// leaders, a worker whose announcements do not get through meanwhile
// (connected to the node cut off, or the elections outlasting half its
// lease) fences itself off and rejoins, and the output is the
// single-process one. Leases of 10 s, the default: the elections take
// seconds.
func TestNATSNodeCutOff(t *testing.T) {
	want := lines(singleProcess(t, threeStages))
	dir := t.TempDir()
	paced := pacedToFiles(t, dir)
	nw := netnstest.New(t, 5)
	c := startNetnsCluster(t, nw.Machines[:3])
	name := fmt.Sprintf("nodecut-%d", time.Now().UnixNano())
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	defer nc.Close()
	ttl := leaseTTLEnv + "=10s"
	procs := []*process{startWorkerIn(t, nw.Machines[3], c.URL(), paced, name, "w1", ttl)}
	require.Eventually(t, func() bool { _, ok := entry(nc, name, "workers", "w1"); return ok }, 60*time.Second, 20*time.Millisecond)
	procs = append(procs, startWorkerIn(t, nw.Machines[4], c.URL(), paced, name, "w2", ttl))
	require.Eventually(t, func() bool { return fileLines(t, dir) >= len(want)/4 }, 90*time.Second, 10*time.Millisecond,
		"the replay makes progress")
	node := streamLeader(t, nc, name)
	m := c.machines[node]
	m.Cut(t)
	t.Logf("cut node n%d off after %d lines", node+1, fileLines(t, dir))
	time.Sleep(10 * time.Second)
	m.Restore(t)
	t.Logf("reconnected node n%d after %d lines", node+1, fileLines(t, dir))
	awaitProcesses(t, 3*time.Minute, procs...)
	for _, p := range procs {
		t.Logf("worker %s: fenced: %t", p.name, fenced(p))
	}
	requireSameLines(t, want, workerFiles(t, dir))
}
