package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/postgres"
)

// Probe is what CheckConnections found of one component.
type Probe struct {
	// Component names the component by its kind: "postgres sink 'db'".
	Component string
	// Found says what the check found, or why it was skipped.
	Found string
	// Skipped says that the component was not checked.
	Skipped bool
	// Err is why the component cannot run, nil when it can.
	Err error
}

// CheckConnections checks, for every source and sink of p, in file order,
// what a run needs of the world outside and retrying cannot fix, without
// writing anything: a PostgreSQL sink's database, schema, table and
// privileges (postgres.Check); that an MQTT source's or sink's broker
// accepts a connection (mqtt.Probe, under a probe's own client id, so
// that the pipeline's persistent sessions are left alone); that a file
// sink's output can be written, without creating it; that an HTTP
// source's address is free to listen on. It says which recordings a file
// source reads (Check opened them) and skips InfluxDB sinks and the
// types registered by programs (RegisterSource, RegisterSink). Relative
// paths resolve against dir, or the pipeline file's directory when dir is
// empty.
func (p *Pipeline) CheckConnections(ctx context.Context, dir string) []Probe {
	dir = p.dir(dir)
	var probes []Probe
	for _, s := range p.Sources {
		switch {
		case s.File != nil:
			found := "recording readable"
			if len(s.File.Paths) > 1 {
				found = fmt.Sprintf("%d recordings readable", len(s.File.Paths))
			}
			probes = append(probes, Probe{Component: fmt.Sprintf("file source '%s'", s.Name), Found: found})
		case s.MQTT != nil:
			probes = append(probes, probeBroker(ctx, fmt.Sprintf("mqtt source '%s'", s.Name), mqttSourceConfigs(&s, dir, "", nil, false)[0].ConnConfig))
		case s.HTTP != nil:
			probes = append(probes, probeListen(fmt.Sprintf("http source '%s'", s.Name), s.HTTP.Addr))
		default:
			probes = append(probes, notChecked(fmt.Sprintf("%s source '%s'", s.Type, s.Name)))
		}
	}
	for _, b := range p.Bolts {
		switch {
		case b.Sink == nil:
		case b.Sink.Postgres != nil:
			what := fmt.Sprintf("postgres sink '%s'", b.Name)
			found, err := postgres.Check(ctx, *b.Sink.Postgres)
			probes = append(probes, Probe{Component: what, Found: found.String(), Err: err})
		case b.Sink.MQTT != nil:
			probes = append(probes, probeBroker(ctx, fmt.Sprintf("mqtt sink '%s'", b.Name), mqttSinkConfig(b.Sink.MQTT, b.Name, Options{Dir: dir}).ConnConfig))
		case b.Sink.Type == "file":
			probes = append(probes, probeFile(fmt.Sprintf("file sink '%s'", b.Name), resolve(dir, b.Sink.File)))
		default:
			probes = append(probes, notChecked(fmt.Sprintf("%s sink '%s'", b.Sink.Type, b.Name)))
		}
	}
	return probes
}

// notChecked is the probe of a component --connect has no check for.
func notChecked(what string) Probe {
	return Probe{Component: what, Found: "not checked: validate --connect has no check for this type", Skipped: true}
}

// probeBroker checks that a broker of c accepts a connection.
func probeBroker(ctx context.Context, what string, c mqtt.ConnConfig) Probe {
	broker, err := mqtt.Probe(ctx, c)
	return Probe{Component: what, Found: "broker " + broker + " accepted the connection", Err: err}
}

// probeListen checks that addr is free to listen on, or httpwrite's
// default address when addr is empty.
func probeListen(what, addr string) Probe {
	if addr == "" {
		addr = httpwrite.DefaultAddr
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return Probe{Component: what, Err: fmt.Errorf("listen on %s: %w", addr, err)}
	}
	if err := l.Close(); err != nil {
		return Probe{Component: what, Err: fmt.Errorf("listen on %s: %w", addr, err)}
	}
	return Probe{Component: what, Found: "address " + addr + " free"}
}

// probeFile checks that path can be written: an existing file is opened
// for writing, unchanged; for a new one, a temporary file is created in
// its directory and removed, which tells what permissions, read-only
// mounts and ACLs allow where asking for permission bits would not.
func probeFile(what, path string) Probe {
	if path == "-" {
		return Probe{Component: what, Found: "standard output"}
	}
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		if err := f.Close(); err != nil {
			return Probe{Component: what, Err: fmt.Errorf("%s: %w", path, err)}
		}
		return Probe{Component: what, Found: path + " writable (it exists: a run rewrites it)"}
	} else if !errors.Is(err, os.ErrNotExist) {
		return Probe{Component: what, Err: fmt.Errorf("%s: %w", path, err)}
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".sensorstorm-validate-*")
	if err != nil {
		return Probe{Component: what, Err: fmt.Errorf("%s: directory %s is not writable: %w", path, dir, err)}
	}
	name := f.Name()
	err = errors.Join(f.Close(), os.Remove(name))
	if err != nil {
		return Probe{Component: what, Err: fmt.Errorf("%s: remove the probe %s: %w", path, name, err)}
	}
	return Probe{Component: what, Found: "directory " + dir + " writable"}
}
