package pipeline

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/particle"
)

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
