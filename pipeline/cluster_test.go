package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/topology"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// On a cluster, what acknowledges from one machine's spool is refused,
// naming the source and the way out; mode tree and recordings run.
func TestCheckCluster(t *testing.T) {
	tree := strings.Replace(goodMQTT, "mode: spool", "mode: tree", 1)
	for _, tc := range []struct {
		name, file string
		want       string
	}{
		{"mqtt tree", tree, ""},
		{"mqtt spool", goodMQTT, `p.yaml:2:5: source "sensors": mqtt mode spool cannot run on a cluster: the worker taking an instance over cannot replay another's spool; set mode: tree`},
		{"http", "sources:\n  - name: influx\n    http: {addr: \"localhost:8086\", state_dir: state}\nbolts:\n  - name: out\n    input: {from: influx}\n    sink: {file: \"-\"}\n",
			`p.yaml:2:5: source "influx": an http source cannot run on a cluster`},
		{"recording", "sources:\n  - name: wsn\n    file: {paths: [x.lp]}\nbolts:\n  - name: out\n    input: {from: wsn}\n    sink: {file: \"-\"}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pipeline.Parse([]byte(tc.file), "p.yaml")
			require.NoError(t, err)
			if tc.want == "" {
				require.NoError(t, p.CheckCluster())
				return
			}
			require.ErrorContains(t, p.CheckCluster(), tc.want)
		})
	}

	p, err := pipeline.Parse([]byte(goodMQTT), "p.yaml")
	require.NoError(t, err)
	_, err = p.Build(pipeline.Options{Dir: t.TempDir(), Cluster: "mean"})
	require.ErrorContains(t, err, "mqtt mode spool cannot run on a cluster", "Build refuses it too")
}

// An MQTT source of a cluster runs only leased: instances with one
// client id on every worker would take the session from each other.
func TestClusterMQTTSourcesAreLeased(t *testing.T) {
	p, err := pipeline.Parse([]byte(pipeline.SharedFeed), "p.yaml")
	require.NoError(t, err)
	opts := pipeline.Options{Dir: t.TempDir(), Stdout: io.Discard, Cluster: "mean", Transport: noTransport{}}
	_, err = p.Build(opts)
	require.ErrorContains(t, err, `p.yaml:2:5: source "sensors": an MQTT source of a cluster needs a lease`)

	var leased []string
	opts.LeaseLiveSource = func(name string, instance int, open func() (topology.Source, func() error)) topology.Source {
		src, disconnect := open()
		_, isMQTT := src.(*mqtt.Source)
		leased = append(leased, fmt.Sprintf("%s[%d] %t", name, instance, isMQTT))
		assert.NoError(t, disconnect(), "an instance that never connected disconnects")
		// Held by another worker: this one never connects.
		return topology.SourceFunc(func(context.Context, topology.SourceEmitter) error { return nil })
	}
	built, err := p.Build(opts)
	require.NoError(t, err)
	require.NoError(t, built.Run(context.Background()))
	slices.Sort(leased)
	assert.Equal(t, []string{"sensors[0] true", "sensors[1] true"}, leased)
}

// noTransport keeps every edge in process.
type noTransport struct{}

func (noTransport) Edge(string, int) (edge.Outlet, edge.Inlet, bool) { return nil, nil, false }
