package influxdb_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// A pipeline whose results go to InfluxDB: here a stand-in server that
// prints what it is sent, where a real one would be
// http://localhost:8086/write?db=sensors.
func ExampleSink() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Printf("%s %s?%s\n%s", r.Method, r.URL.Path, r.URL.RawQuery, body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	sink, err := influxdb.NewSink(influxdb.Config{URL: srv.URL + "/write?db=sensors", Precision: particle.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close()
	topo, _ := topology.New(topology.Config{Replay: true})
	topo.AddSource("sensors", topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		for i := range 3 {
			out.Emit(particle.Particle{
				Time:        1_700_000_000e9 + int64(i)*1e9,
				Measurement: "temperature",
				Tags:        []particle.Tag{{Key: "room", Value: "lab"}},
				Fields:      []particle.Field{{Key: "celsius", Value: particle.Float(21 + float64(i)/2)}},
			})
		}
		return nil
	})), topology.SourceConfig{})
	topo.AddBolt("influx", operation.Stateless(sink), topology.BoltConfig{}).Input("sensors", topology.Global())
	if err := topo.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("written:", sink.Stats().Written.Load())
	// Output:
	// POST /write?db=sensors&precision=s
	// temperature,room=lab celsius=21 1700000000
	// temperature,room=lab celsius=21.5 1700000001
	// temperature,room=lab celsius=22 1700000002
	// written: 3
}
