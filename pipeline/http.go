package pipeline

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
)

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
