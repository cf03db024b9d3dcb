package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Two recordings merge by event time into one stream, replayed as fast as
// possible through a sink that writes line protocol.
func Example() {
	dir, _ := os.MkdirTemp("", "replay")
	defer os.RemoveAll(dir)
	a := filepath.Join(dir, "a.lp")
	b := filepath.Join(dir, "b.csv")
	os.WriteFile(a, []byte("temp,node=a v=20.5 1700000000\ntemp,node=a v=20.7 1700000060\n"), 0o644)
	os.WriteFile(b, []byte("time,v\n2023-11-14T22:13:50Z,19.1\n"), 0o644)

	lp := file.Format{Precision: particle.Second}
	csv, _ := file.Preset(file.PresetCSV)
	csv.Delimited.Measurement = "temp"
	csv.Delimited.ConstTags = map[string]string{"node": "b"}
	src, err := replay.New(replay.Config{
		Inputs: []replay.Input{{Path: a, Format: &lp}, {Path: b, Format: &csv}},
		Speed:  replay.Max,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var out bytes.Buffer
	topo, _ := topology.New(topology.Config{Replay: true})
	topo.AddSource("replay", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(file.NewSink(&out, particle.Second)), topology.BoltConfig{
		Buffer: syncbuffer.Config{FutureBound: -1},
	}).Input("replay", topology.Global())
	if err := topo.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())
	st := src.Status()
	fmt.Printf("read %d, emitted %d\n", st.Read, st.Emitted)
	// Output:
	// temp,node=a v=20.5 1700000000
	// temp,node=b v=19.1 1700000030
	// temp,node=a v=20.7 1700000060
	// read 3, emitted 3
}
