package httpwrite_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Example receives an InfluxDB 2.x write and prints its points as they
// leave the pipeline.
func Example() {
	state, _ := os.MkdirTemp("", "httpwrite")
	defer os.RemoveAll(state)

	src, _ := httpwrite.NewSource(httpwrite.Config{Addr: "127.0.0.1:0", StateDir: state, Token: "secret"})
	defer src.Close() // after the topology's Run returned
	printed := make(chan struct{})
	topo, _ := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
	topo.AddSource("influx", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("print", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, _ operation.Emitter) error {
		line, _ := particle.AppendLineProtocol(nil, &in, particle.Second)
		fmt.Printf("%s", line)
		close(printed)
		return nil
	})), topology.BoltConfig{}).Input("influx", topology.Global())
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- topo.Run(ctx) }()
	<-src.Ready()

	// What Telegraf or an InfluxDB client library sends.
	req, _ := http.NewRequest(http.MethodPost, "http://"+src.Addr().String()+"/api/v2/write?bucket=home&org=me&precision=s",
		strings.NewReader("env,room=kitchen temp=21.5 1700000000\n"))
	req.Header.Set("Authorization", "Token secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status) // durable in the spool

	stop() // the end of the stream releases the point
	<-done
	<-printed
	// Output:
	// 204 No Content
	// env,room=kitchen temp=21.5 1700000000
}
