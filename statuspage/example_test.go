package statuspage_test

import (
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/statuspage"
	"github.com/sensorstorm/sensorstorm/topology"
)

// A page for a topology: serve the Server (and call its Run, which makes
// the updates of /events); /snapshot has the latest figures.
func ExampleServer() {
	topo, _ := topology.New(topology.Config{})
	topo.AddSource("sensors", nil, topology.SourceConfig{})
	topo.AddBolt("mean", operation.Stateless(operation.Func(nil)), topology.BoltConfig{Parallelism: 4}).
		Input("sensors", topology.Fields("node"))
	page, _ := statuspage.New(statuspage.Config{Topology: topo, Title: "example"})
	srv := httptest.NewServer(page) // a command serves it on --http-addr
	defer srv.Close()

	res, err := http.Get(srv.URL + "/snapshot")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	var snap statuspage.Snapshot
	_ = json.NewDecoder(res.Body).Decode(&snap)
	for _, c := range snap.Components {
		fmt.Printf("%s %s x%d in=%d out=%d\n", c.Kind, c.Name, c.Parallelism, c.In, c.Out)
	}
	for _, e := range snap.Edges {
		fmt.Printf("%s -> %s by %s\n", e.From, e.To, e.Grouping)
	}
	// Output:
	// source sensors x1 in=0 out=0
	// sink mean x4 in=0 out=0
	// sensors -> mean by fields(node)
}

// A tap keeps a few points a tick per series, and only while watched.
func ExampleTap() {
	tap := statuspage.NewTap(statuspage.TapConfig{PointsPerTick: 2})
	release := tap.Watch() // the server watches while a browser is connected
	for i := range 5 {
		tap.Offer(&particle.Particle{
			Time: int64(i) * 1e9, Measurement: "wsn", Tags: []particle.Tag{{Key: "node", Value: "7"}},
			Fields: []particle.Field{{Key: "temperature", Value: particle.Float(20 + float64(i))}},
		})
	}
	tap.Tick() // a new update: two more points may come
	tap.Offer(&particle.Particle{Time: 9e9, Measurement: "wsn", Tags: []particle.Tag{{Key: "node", Value: "7"}},
		Fields: []particle.Field{{Key: "temperature", Value: particle.Float(29)}}})
	release()
	for _, s := range tap.Snapshot().Series {
		fmt.Println(s.Key, s.Fields)
		for _, p := range s.Points {
			fmt.Println(p.T, p.V)
		}
	}
	// Output:
	// wsn,node=7 [temperature]
	// 0 [20]
	// 1000 [21]
	// 9000 [29]
}

// pump is a source of the user's own, a pump station polled over a
// serial line: its methods make it a Reporter without importing
// statuspage.
type pump struct{ polls int64 }

func (p *pump) Connections() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) { yield("/dev/ttyUSB0", "connected") }
}

func (p *pump) Counters() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) { _ = yield("polls", p.polls) && yield("timeouts", 0) }
}

// Any source or sink with the methods of Reporter has a panel, found among
// the instances of its component.
func ExampleReporter() {
	topo, _ := topology.New(topology.Config{})
	topo.AddSource("pumps", nil, topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(operation.Func(nil)), topology.BoltConfig{}).Input("pumps", topology.Global())
	src := &pump{polls: 42}
	page, _ := statuspage.New(statuspage.Config{Topology: topo, Instances: func(component string) []any {
		if component == "pumps" {
			return []any{src}
		}
		return nil
	}})
	res := httptest.NewRecorder()
	page.ServeHTTP(res, httptest.NewRequest("GET", "/snapshot", nil))
	var snap statuspage.Snapshot
	_ = json.Unmarshal(res.Body.Bytes(), &snap)
	for _, c := range snap.Connectors {
		fmt.Println(c.Component, c.Connections, c.Counters)
	}
	// Output:
	// pumps [{/dev/ttyUSB0 connected}] [{polls 42} {timeouts 0}]
}
