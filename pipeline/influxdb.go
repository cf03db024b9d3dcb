package pipeline

import (
	"io"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// influxSinkType writes to a InfluxDB write API (influxdb.Config), connecting when the run
// starts.
var influxSinkType = sinkType{
	decode: func(d *decoder, n *yaml.Node, what, _ string, prec *particle.Precision, s *Sink) {
		s.InfluxDB = d.influxSink(n, what, prec)
	},
	open: func(s *Sink, _ string, opts Options) (operation.Operation, io.Closer, error) {
		cfg := *s.InfluxDB
		if cfg.Logger == nil {
			cfg.Logger = opts.Logger
		}
		sink, err := influxdb.NewSink(cfg)
		return sink, nil, err
	},
}

// influxSink decodes the influxdb mapping of a sink: the keys of
// connectors/influxdb's Config. The sink's precision, when given, is the
// default of the mapping's.
func (d *decoder) influxSink(n *yaml.Node, what string, prec *particle.Precision) *influxdb.Config {
	var cfg influxdb.Config
	if prec != nil {
		cfg.Precision = *prec
	}
	if !d.decodeStruct(n, reflect.ValueOf(&cfg).Elem(), what+": sink: influxdb") {
		return nil
	}
	if _, err := influxdb.NewSink(cfg); err != nil {
		d.fail(n, "%s: sink: %v", what, err)
	}
	return &cfg
}
