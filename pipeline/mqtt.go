package pipeline

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// DefaultMQTTMaxPending is acking's max_pending in pipelines with MQTT
// sources: a window holds its inputs' trees open until it fires, and the
// engine's default would cap a feed at that many messages per window.
const DefaultMQTTMaxPending = 1 << 18

// PasswordEnv is the environment variable an MQTT password is read from
// when the pipeline gives a username and no password.
const PasswordEnv = "SENSORSTORM_MQTT_PASSWORD"

// mqttSourceParams is the mqtt mapping of a source: the connector's
// configuration, and broker for the common case of one URL.
type mqttSourceParams struct {
	Broker      string `yaml:"broker"`
	mqtt.Config `yaml:",inline"`
}

// mqttSinkParams is the mqtt mapping of a sink.
type mqttSinkParams struct {
	Broker          string `yaml:"broker"`
	mqtt.SinkConfig `yaml:",inline"`
}

// mqttSourceType subscribes to MQTT feeds (mqtt.Config).
var mqttSourceType = sourceType{
	decode: func(d *decoder, n *yaml.Node, what string, s *Source) {
		s.MQTT = d.mqttSource(n, what, s.Name)
		s.ownClientID = valueOf(n, "client_id") != n
	},
	build: func(s *Source, env *buildEnv, _ *topology.SourceConfig) (topology.SourceFactory, error) {
		switch {
		case env.opts.LeaseLiveSource != nil:
			return leasedMQTTSource(s, env.opts, env.built)
		case env.opts.Transport != nil:
			return nil, errors.New("an MQTT source of a cluster needs a lease (Options.LeaseLiveSource)")
		}
		srcs, err := mqttSources(s, env.opts, env.checkpoints)
		for i, src := range srcs {
			env.built.sources = append(env.built.sources, src)
			env.built.addInstance(s.Name, i, src)
			env.opened = append(env.opened, src)
		}
		return func(i int) topology.Source { return srcs[i] }, err
	},
	live: true,
	feed: true,
}

// mqttSinkType publishes to an MQTT broker (mqtt.SinkConfig).
var mqttSinkType = sinkType{
	decode: func(d *decoder, n *yaml.Node, what, name string, prec *particle.Precision, s *Sink) {
		s.MQTT = d.mqttSink(n, what, name, prec)
	},
	open: func(s *Sink, name string, opts Options) (operation.Operation, io.Closer, error) {
		sink, err := mqtt.NewSink(mqttSinkConfig(s.MQTT, name, opts))
		return sink, nil, err
	},
}

func (d *decoder) mqttSource(n *yaml.Node, what, name string) *mqtt.Config {
	var p mqttSourceParams
	if !d.decodeStruct(n, reflect.ValueOf(&p).Elem(), what+": mqtt") {
		return nil
	}
	before := len(d.errs)
	cfg := p.Config
	d.conn(n, what, name, p.Broker, &cfg.ConnConfig)
	if len(cfg.Topics) == 0 {
		d.fail(n, "%s: mqtt: no topics: set topics, filters such as sensors/#", what)
	}
	if cfg.Mode == mqtt.ModeSpool && cfg.StateDir == "" {
		d.fail(n, "%s: mqtt: mode spool (the default) needs state_dir, the directory of its write-ahead spool (or set mode: tree or receipt)", what)
	}
	if len(d.errs) == before {
		if _, err := mqtt.NewSource(cfg); err != nil {
			d.fail(n, "%s: %v", what, err)
		}
	}
	return &cfg
}

// mqttSink decodes the mqtt mapping of a sink; the sink's precision
// applies unless the mapping sets its own.
func (d *decoder) mqttSink(n *yaml.Node, what, name string, prec *particle.Precision) *mqtt.SinkConfig {
	var p mqttSinkParams
	if !d.decodeStruct(n, reflect.ValueOf(&p).Elem(), what+": sink: mqtt") {
		return nil
	}
	before := len(d.errs)
	cfg := p.SinkConfig
	d.conn(n, what+": sink", name, p.Broker, &cfg.ConnConfig)
	if cfg.Topic == "" {
		d.fail(n, "%s: sink: mqtt: no topic: set topic, a template such as results/{sensor}", what)
	}
	if prec != nil && valueOf(n, "precision") == n {
		cfg.Precision = *prec
	}
	if len(d.errs) == before {
		if _, err := mqtt.NewSink(cfg); err != nil {
			d.fail(n, "%s: %v", what, err)
		}
	}
	return &cfg
}

// conn completes the connection settings of component name: broker joins
// the brokers, and the client id defaults to one of its own, since two
// clients with one id take each other's session.
func (d *decoder) conn(n *yaml.Node, what, name, broker string, c *mqtt.ConnConfig) {
	if broker != "" {
		c.Brokers = append([]string{broker}, c.Brokers...)
	}
	if len(c.Brokers) == 0 {
		d.fail(n, "%s: mqtt: no broker: set broker, a URL such as tcp://localhost:1883", what)
	}
	for _, b := range c.Brokers {
		if err := checkBroker(b); err != nil {
			d.fail(n, "%s: mqtt: broker %q: %v", what, b, err)
		}
	}
	if c.ClientID == "" {
		c.ClientID = mqtt.DefaultClientID("sensorstorm-" + name)
	}
}

// brokerSchemes are the URL schemes of MQTT brokers.
func brokerSchemes() []string { return []string{"tcp", "mqtt", "ssl", "tls", "mqtts", "ws", "wss"} }

// checkBroker reports a broker URL that cannot name an MQTT broker: one
// without a known scheme (http://), a host, or a numeric port.
func checkBroker(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if !slices.Contains(brokerSchemes(), u.Scheme) {
		return fmt.Errorf("want a URL such as tcp://localhost:1883 (schemes: %s)", strings.Join(brokerSchemes(), ", "))
	}
	if u.Hostname() == "" {
		return errors.New("no host")
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return fmt.Errorf("port %q is not a number from 0 to 65535", p)
		}
	}
	return nil
}

// checkMQTT reports problems of MQTT components in the pipeline as a
// whole.
func (d *decoder) checkMQTT(p *Pipeline) {
	var file, feed *Source
	owners := map[string]string{} // client ids and spool directories taken
	claim := func(kind, value, owner string, at pos) {
		key := kind + "\x00" + value
		if first, ok := owners[key]; ok && first != owner {
			d.failAt(at, "%s: %s %q is %s's too: give each MQTT component its own", owner, kind, value, first)
		}
		owners[key] = owner
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.File != nil && file == nil {
			file = s
		}
		if h := s.HTTP; h != nil {
			what := fmt.Sprintf("source %q", s.Name)
			if feed == nil {
				feed = s
			}
			if p.ackingEnabledSet && !p.Acking.Enabled {
				d.failAt(s.pos, "%s: an http source learns from acking when a write was processed and may leave the spool: enable acking", what)
			}
			claim("state_dir", filepath.Clean(h.StateDir), what, s.pos)
			claim("addr", h.Addr, what, s.pos)
			continue
		}
		c := s.MQTT
		if c == nil {
			continue
		}
		if feed == nil {
			feed = s
		}
		what := fmt.Sprintf("source %q", s.Name)
		if s.Parallelism > 1 {
			for _, t := range c.Topics {
				if !strings.HasPrefix(t, "$share/") {
					d.failAt(s.pos, "%s: parallelism %d needs shared subscriptions, such as $share/%s/%s: with topic %q every instance would receive every message", what, s.Parallelism, s.Name, t, t)
				}
			}
		}
		if c.Mode != mqtt.ModeReceipt && p.ackingEnabledSet && !p.Acking.Enabled {
			d.failAt(s.pos, "%s: mqtt mode %s learns from acking when messages were processed: with acking off a crash would lose what is in flight (enable acking, or set mode: receipt)", what, c.Mode)
		}
		claim("client id", c.ClientID, what, s.pos)
		if c.Mode == mqtt.ModeSpool {
			claim("state_dir", filepath.Clean(c.StateDir), what, s.pos)
		}
	}
	if file != nil && feed != nil {
		kind := "an MQTT feed"
		if feed.HTTP != nil {
			kind = "an http source"
		}
		d.failAt(feed.pos, "source %q: %s runs on the live clock and file source %q replays on its own: run them as two pipelines", feed.Name, kind, file.Name)
	}
	for _, b := range p.Bolts {
		if b.Sink != nil && b.Sink.MQTT != nil {
			claim("client id", b.Sink.MQTT.ClientID, fmt.Sprintf("bolt %q", b.Name), b.pos)
			if p.Checkpoints.Dir != "" {
				if err := stagedSinkInstances(b); err != nil {
					d.failAt(b.pos, "%v", err)
				}
			}
		}
	}
}

// stagedSinkInstances reports an MQTT sink bolt that publishes at
// checkpoints with more than one instance: each would take its snapshot
// at its own point of the stream.
func stagedSinkInstances(b Bolt) error {
	if b.Sink == nil || b.Sink.MQTT == nil || b.Sink.MQTT.AtLeastOnce || b.Parallelism <= 1 {
		return nil
	}
	return fmt.Errorf("bolt %q: parallelism %d: an mqtt sink publishes at checkpoints from one instance; remove parallelism, or set at_least_once: true to publish at once and again after a restore", b.Name, b.Parallelism)
}

// Live reports whether the pipeline reads MQTT feeds, which run on the
// live clock until stopped.
func (p *Pipeline) Live() bool {
	for _, s := range p.Sources {
		if t, _ := sourceTypes.get(s.Type); t.live {
			return true
		}
	}
	return false
}

// CheckCluster reports the components that cannot run on a cluster of
// workers: http sources, whose address and spool are one machine's, and
// MQTT sources in mode spool, whose acknowledged messages wait in one
// worker's spool, where the worker taking the instance over cannot replay
// them; and MQTT sinks of several instances that publish at checkpoints,
// which a cluster always takes. On a cluster, mode tree acknowledges a
// message once JetStream holds its particles.
func (p *Pipeline) CheckCluster() error {
	var errs []error
	for _, s := range p.Sources {
		var err error
		switch {
		case s.HTTP != nil:
			err = fmt.Errorf("source %q: an http source cannot run on a cluster: its address and spool are one machine's", s.Name)
		case s.MQTT != nil && s.MQTT.Mode == mqtt.ModeSpool:
			err = fmt.Errorf("source %q: mqtt mode spool cannot run on a cluster: the worker taking an instance over cannot replay another's spool; set mode: tree, which acknowledges a message once JetStream holds its particles", s.Name)
		}
		if err != nil {
			errs = append(errs, &Error{File: p.File, Line: s.pos.line, Column: s.pos.col, Err: err})
		}
	}
	for _, b := range p.Bolts {
		if err := stagedSinkInstances(b); err != nil {
			errs = append(errs, &Error{File: p.File, Line: b.pos.line, Column: b.pos.col, Err: err})
		}
	}
	return errors.Join(errs...)
}

// mqttSourceConfigs returns the configurations of the instances of an MQTT
// source, paths resolved against dir: with several instances, each has its
// own client id and spool directory. In the cluster named cluster, the
// client id the file does not give is the pipeline's, not the host's.
func mqttSourceConfigs(s *Source, dir, cluster string, logger *slog.Logger, checkpoints bool) []mqtt.Config {
	cfgs := make([]mqtt.Config, s.Parallelism)
	for i := range cfgs {
		c := *s.MQTT
		c.Checkpoints = checkpoints
		if cluster != "" && !s.ownClientID {
			c.ClientID = "sensorstorm-" + cluster + "-" + s.Name
		}
		resolveConn(&c.ConnConfig, dir, logger, s.Name)
		c.Spool.Logger = c.Logger
		if c.StateDir != "" {
			c.StateDir = resolve(dir, c.StateDir)
		}
		if s.Parallelism > 1 {
			c.ClientID += "-" + strconv.Itoa(i)
			if c.StateDir != "" {
				c.StateDir = filepath.Join(c.StateDir, strconv.Itoa(i))
			}
		}
		cfgs[i] = c
	}
	return cfgs
}

// resolveConn resolves the TLS files against dir, reads the password from
// PasswordEnv when needed and gives the connection a logger.
func resolveConn(c *mqtt.ConnConfig, dir string, logger *slog.Logger, component string) {
	for _, path := range []*string{&c.TLS.CAFile, &c.TLS.CertFile, &c.TLS.KeyFile} {
		if *path != "" {
			*path = resolve(dir, *path)
		}
	}
	if c.Username != "" && c.Password == "" {
		c.Password = os.Getenv(PasswordEnv)
	}
	if logger != nil {
		c.Logger = logger.With("component", component)
	}
}

// tlsFiles returns the files a connection reads.
func tlsFiles(c *mqtt.ConnConfig) []string {
	var files []string
	for _, f := range []string{c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile} {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}
