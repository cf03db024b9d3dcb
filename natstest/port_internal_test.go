package natstest

import (
	"net"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// A server whose route port another process took starts again on
// another one.
func TestStartTakesAnotherRoutePort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	c := &Cluster{tb: t, servers: make([]*server.Server, 1), opts: []*server.Options{{
		ServerName: "n1", Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: false, NoLog: true, NoSigs: true,
		Cluster: server.ClusterOpts{Name: "sensorstorm-test", Host: "127.0.0.1", Port: port},
	}}}
	t.Cleanup(c.shutdown)
	c.Start(0)
	if c.opts[0].Cluster.Port == port {
		t.Fatalf("started on the taken route port %d", port)
	}
}
