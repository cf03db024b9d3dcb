package main

import (
	"flag"
	"log/slog"
	"os"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/pipeline"
)

// influxFlags are the flags of the InfluxDB output of ingest and replay.
type influxFlags struct {
	url, token string
}

func (f *influxFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "influx-out", "", "write the output to InfluxDB instead of --out: the write `URL`, http://HOST:8086/write?db=NAME (1.x)\n"+
		"or http://HOST:8086/api/v2/write?org=ORG&bucket=BUCKET (2.x); user:password@HOST for basic authentication")
	fs.StringVar(&f.token, "influx-token", "", "token for --influx-out (default: $SENSORSTORM_INFLUX_TOKEN)")
}

// check reports a usage error of the flags, or 0; prec is the output's
// precision.
func (f *influxFlags) check(c *cli, prec particle.Precision) int {
	if f.url == "" {
		return 0
	}
	if c.missing("out") == "" {
		return c.usageError("--influx-out writes instead of --out: give one of them (a pipeline file writes to both)")
	}
	// Made to be checked: a sink connects when it runs.
	if _, err := influxdb.NewSink(*f.config(prec, nil)); err != nil {
		return c.usageError("--influx-out: %v", err)
	}
	return 0
}

// config returns the configuration of the InfluxDB output.
func (f *influxFlags) config(prec particle.Precision, logger *slog.Logger) *influxdb.Config {
	token := f.token
	if token == "" {
		token = os.Getenv("SENSORSTORM_INFLUX_TOKEN")
	}
	return &influxdb.Config{URL: f.url, Token: token, Precision: prec, Logger: logger}
}

// output returns the sink of the output: InfluxDB with --influx-out, else
// the file at path, "-" for standard output, added to if appendTo.
func (f *influxFlags) output(path string, appendTo bool, prec particle.Precision, logger *slog.Logger) *pipeline.Sink {
	if f.url != "" {
		return &pipeline.Sink{Type: "influxdb", Precision: prec, InfluxDB: f.config(prec, logger)}
	}
	return &pipeline.Sink{Type: "file", File: path, Append: appendTo, Precision: prec}
}

// written returns how many particles op, the output's sink, wrote.
func written(op any) uint64 {
	switch s := op.(type) {
	case *file.Sink:
		return s.Written()
	case *influxdb.Sink:
		return s.Stats().Written.Load()
	}
	return 0
}
