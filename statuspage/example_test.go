package statuspage_test

import (
	"encoding/json"
	"fmt"
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
