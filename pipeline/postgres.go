package pipeline

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
)

// postgresSink decodes the postgres mapping of a sink: the keys of
// connectors/postgres's Config.
func (d *decoder) postgresSink(n *yaml.Node, what string) *postgres.Config {
	var cfg postgres.Config
	if !d.decodeStruct(n, reflect.ValueOf(&cfg).Elem(), what+": sink: postgres") {
		return nil
	}
	if cfg.Table == "" {
		d.fail(n, "%s: sink: postgres: no table: set table, such as readings or metrics.readings", what)
		return &cfg
	}
	if _, err := postgres.NewSink(cfg); err != nil {
		d.fail(n, "%s: sink: %v", what, err)
	}
	return &cfg
}
