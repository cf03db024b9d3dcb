package main

import (
	"flag"
	"log/slog"
	"os"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
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

// check reports a usage error of the flags, or 0.
func (f *influxFlags) check(c *cli) int {
	if f.url != "" && c.missing("out") == "" {
		return c.usageError("--influx-out writes instead of --out: give one of them (a pipeline file writes to both)")
	}
	return 0
}

// sink returns the output's sink: an InfluxDB sink when --influx-out is
// set, else the file sink made by file, and a function counting what it
// wrote.
func (f *influxFlags) sink(prec particle.Precision, logger *slog.Logger, file func() (writtenSink, error)) (operation.Operation, func() uint64, error) {
	if f.url == "" {
		out, err := file()
		if err != nil {
			return nil, nil, err
		}
		return out, out.Written, nil
	}
	token := f.token
	if token == "" {
		token = os.Getenv("SENSORSTORM_INFLUX_TOKEN")
	}
	sink, err := influxdb.NewSink(influxdb.Config{URL: f.url, Token: token, Precision: prec, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	return sink, sink.Stats().Written.Load, nil
}

// writtenSink is a sink that counts the particles it wrote.
type writtenSink interface {
	operation.Operation
	Written() uint64
}
