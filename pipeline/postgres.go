package pipeline

import (
	"io"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// postgresSinkType writes to a PostgreSQL table (postgres.Config), connecting when the run
// starts.
var postgresSinkType = sinkType{
	decode: func(d *decoder, n *yaml.Node, what, _ string, _ *particle.Precision, s *Sink) {
		s.Postgres = d.postgresSink(n, what)
	},
	open: func(s *Sink, _ string, opts Options) (operation.Operation, io.Closer, error) {
		cfg := *s.Postgres
		if cfg.Logger == nil {
			cfg.Logger = opts.Logger
		}
		sink, err := postgres.NewSink(cfg)
		return sink, nil, err
	},
}

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
