package pipeline

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/topology"
)

// httpSourceType receives InfluxDB writes over HTTP (httpwrite.Config).
var httpSourceType = sourceType{
	decode: func(d *decoder, n *yaml.Node, what string, s *Source) {
		s.HTTP = d.httpSource(n, what, s.Parallelism)
	},
	build: func(s *Source, env *buildEnv, scfg *topology.SourceConfig) (topology.SourceFactory, error) {
		src, err := httpSource(s, env.opts, env.checkpoints)
		if err != nil {
			return nil, err
		}
		env.built.sources = append(env.built.sources, src)
		env.built.addBacklog(s.Name, 0, src)
		env.opened = append(env.opened, src)
		// The engine judges the lines the source answered for by the
		// same bound, so that it never drops one answered 204.
		scfg.FutureBound = s.HTTP.FutureBound
		return topology.Single(src), nil
	},
	live: true,
}

// httpSource decodes the http mapping of a source: the keys of
// connectors/httpwrite's Config.
func (d *decoder) httpSource(n *yaml.Node, what string, parallelism int) *httpwrite.Config {
	var cfg httpwrite.Config
	if !d.decodeStruct(n, reflect.ValueOf(&cfg).Elem(), what+": http") {
		return nil
	}
	before := len(d.errs)
	if cfg.StateDir == "" {
		d.fail(n, "%s: http: no state_dir: set the directory of the spool that makes writes durable before they are answered", what)
	}
	if parallelism > 1 {
		d.fail(n, "%s: http: parallelism %d: an http source listens on one address, so it has one instance", what, parallelism)
	}
	if len(d.errs) == before {
		if _, err := httpwrite.NewSource(cfg); err != nil {
			d.fail(n, "%s: %v", what, err)
		}
	}
	return &cfg
}
