package pipeline

import (
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/postgres"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Pipeline is a parsed and checked pipeline.
type Pipeline struct {
	// File is the name the pipeline was parsed from.
	File string
	// Acking configures guaranteed processing.
	Acking topology.AckingConfig
	// ackingEnabledSet says whether the file set acking's enabled.
	ackingEnabledSet bool
	// Checkpoints, when its Dir is set, makes the run take checkpoints
	// there and resume from the newest.
	Checkpoints Checkpoints
	// Sources and Bolts are the components, in file order.
	Sources []Source
	Bolts   []Bolt
}

// Checkpoints configures a pipeline's checkpoints (topology.CheckpointConfig).
type Checkpoints struct {
	// Dir is the directory of the checkpoints, relative to the
	// pipeline's file; empty turns them off.
	Dir string
	// Interval is the wall time between two checkpoints. Defaults to
	// topology.DefaultCheckpointInterval.
	Interval time.Duration
}

// Source is a source of a pipeline: File, MQTT or HTTP is set for the
// built-in types.
type Source struct {
	Name        string
	Parallelism int
	// Type is the source's type: file, mqtt, http, or one registered
	// (RegisterSource).
	Type string
	// config is the decoded configuration of a registered type.
	config any
	// File is set for recordings replayed from files.
	File *FileSource
	// MQTT is set for MQTT feeds: the connector's configuration, with
	// defaults that depend on the pipeline applied, and paths as in the
	// file (Build resolves them).
	MQTT *mqtt.Config
	// HTTP is set for InfluxDB writes received over HTTP: the
	// connector's configuration, with paths as in the file.
	HTTP *httpwrite.Config
	// ownClientID tells that the file gives the MQTT client id, which a
	// cluster's workers then keep (see Options.Cluster).
	ownClientID bool
	pos         pos
}

// FileSource replays recordings: several files are merged by event time.
type FileSource struct {
	// Paths are the files; "-" is Options.Stdin, which is read once and
	// cannot Loop.
	Paths []string
	// Format is the files' format. Defaults to file.Detect of each path.
	Format *file.Format
	// MaxLineLength, when not zero, replaces the Format's.
	MaxLineLength int
	// Formats, when not nil, are the formats of Paths one by one, in
	// place of Format and MaxLineLength: for a program that detects and
	// adjusts the format of each file (sensorstorm replay's flags do).
	// Pipeline files give Format.
	Formats []file.Format
	// Speed is the replay speed. Defaults to replay.Max.
	Speed replay.Speed
	// From and To bound the records replayed to event times in [From, To)
	// (replay.Config); the zero time leaves that end open.
	From, To time.Time
	// Loop replays the files again and again, moving event time forward
	// at each pass (replay.Config.Loop), until the run is stopped.
	Loop bool
	// Concat reads the files one after the other instead of merging them
	// by event time.
	Concat bool
	// FutureBound is how far a record may jump ahead of the newest one
	// replayed before it is a wild timestamp (replay.Config.FutureBound).
	FutureBound time.Duration
	pos         map[string]pos
}

// Bolt is a bolt of a pipeline: an operation or a sink.
type Bolt struct {
	Name        string
	Parallelism int
	Inputs      []Input
	Buffer      syncbuffer.Config
	// Op is the operation's type ("window-mean", "dedup", ...), or empty
	// for a sink. Its parameters come from a pipeline file: Build refuses
	// an Op set in Go, which Parse did not decode.
	Op string
	// Sink is set for sinks.
	Sink *Sink
	// span is how long the operation holds particles (a window's size),
	// zero for operations that hold none.
	span    time.Duration
	factory operation.Factory
	set     map[string]bool // buffer settings given in the file
	pos     pos
}

// Input is an input of a bolt.
type Input struct {
	From string
	// Stream is the upstream stream, such as topology.LateStream; empty
	// for the default stream.
	Stream string
	// Grouping is shuffle, fields, global, all, or one registered
	// (RegisterGrouping); Fields the names of a fields grouping.
	Grouping string
	Fields   []string
	pos      pos
}

// Sink writes particles out: File, MQTT, Postgres or InfluxDB is set for
// the built-in types.
type Sink struct {
	// Type is the sink's type: file, mqtt, postgres, influxdb, or one
	// registered (RegisterSink).
	Type string
	// config is the decoded configuration of a registered type.
	config any
	// File is the path written as line protocol, "-" for standard output.
	File string
	// Precision is the timestamps' unit.
	Precision particle.Precision
	// Append makes a file sink add to the end of its file, after cutting
	// a torn last line off, instead of replacing it.
	Append bool
	// MQTT is set for sinks publishing to an MQTT broker, with paths as
	// in the file.
	MQTT *mqtt.SinkConfig
	// Postgres is set for sinks writing to a PostgreSQL table.
	Postgres *postgres.Config
	// InfluxDB is set for sinks writing to an InfluxDB write API.
	InfluxDB *influxdb.Config
}

type pos struct{ line, col int }
