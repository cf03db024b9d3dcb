// Package pipeline reads a pipeline, a topology described in a YAML file,
// checks it and builds it.
//
// A pipeline names its sources (recordings replayed at a speed, or MQTT
// feeds), its bolts (inputs with a grouping, parallelism, the
// synchronization buffer's window and late policy, and either a built-in
// operation or a sink writing to a file or publishing to MQTT), and
// optionally the acking settings. For example:
//
//	sources:
//	  - name: wsn
//	    file: {paths: [../testdata/library1-r1.lp], speed: max}
//	bolts:
//	  - name: mean10m
//	    input: {from: wsn, grouping: fields, fields: [node]}
//	    parallelism: 2
//	    window: 5s
//	    op: {type: window-mean, size: 10m, fields: [temperature], by: [node]}
//	  - name: out
//	    input: {from: mean10m, grouping: global}
//	    sink: {file: "-"}
//
// [Parse] reports every problem it finds, each as an [*Error] naming the
// file, line and column, as in
//
//	pipeline.yaml:12:7: bolt "mean10m": unknown op type "window-men" (known: ...)
//
// Sizes have maxima far above any need ([MaxParallelism], [MaxCount],
// [MaxBytes], ...): a slip such as parallelism: 1000000000 is an error
// naming its place, not a run that takes all memory. A file source's
// max_line_length bounds its lines (4 MiB by default).
//
// Parse also reports what would fail only when the pipeline runs: a cycle
// among the bolts, broker URLs that name no MQTT broker (http://...), and
// with [Pipeline.Check] files that cannot be read or created.
//
// [Pipeline.Build] turns a parsed pipeline into a [Built] topology ready to
// Run. Relative paths (recordings, sink files, state directories, TLS
// files) are resolved against the directory of the pipeline file, or
// [Options.Dir] if set.
//
// # Environment variables
//
// ${NAME} in a value is replaced by the environment variable NAME, as in
// broker: ${MQTT_BROKER}; $${ stands for a literal ${. A variable that is
// not set is an error naming its place, not an empty value.
//
// # Window statistics
//
// A window-stats operation gives, per window and group, one particle
// stamped with the window's end (a window [10:00, 10:10) gives a particle
// at 10:10). stddev is the sample standard deviation (divided by n-1,
// left out below two values); pNN is the nearest-rank percentile, the
// value at rank ceil(NN/100 * n) of the sorted values (p50 of 1, 2, 3, 4
// is 2), always one of them; median is p50. The operations are those of
// package ops, their keys those of its configs (ops.StatsConfig, ...).
//
// # MQTT
//
// An mqtt source or sink takes the keys of connectors/mqtt's Config or
// SinkConfig (broker or brokers, client_id, username, password, tls,
// keep_alive, ...; for a source topics, qos, mode, state_dir, payload with
// format, precision, topic_tags and json, backlog with max_backlog_bytes
// and min_free_bytes (the disk quota of spool mode); for a sink topic,
// qos, retain, format, precision), checked key by key like the rest of
// the file:
//
//	sources:
//	  - name: sensors
//	    mqtt:
//	      broker: tcp://localhost:1883
//	      topics: [sensors/#]
//	      mode: spool
//	      state_dir: sensorstorm-state/sensors
//	      payload: {format: json, topic_tags: "sensors/{sensor}", json: {time_field: ts, time_format: unix_ms}}
//	bolts:
//	  - ...
//	  - name: publish
//	    input: {from: mean10s, grouping: global}
//	    sink:
//	      mqtt: {broker: tcp://localhost:1883, topic: "results/{sensor}", qos: 1}
//
// A pipeline with MQTT sources runs on the live clock (it cannot also
// replay files) until it is stopped, with acking on unless the file turns
// it off (only mode receipt allows that) and acking's max_pending at
// [DefaultMQTTMaxPending]. Each MQTT component's client id defaults to
// one of its own, sensorstorm-NAME-HOST; two components may not share a
// client id or a spool. A source with parallelism above one needs shared
// subscriptions ($share/GROUP/FILTER), and its instances get the client
// id and state directory suffixed with their index. On a cluster
// ([Options.Cluster]) a client id the file does not give is
// sensorstorm-CLUSTER-NAME, the same on every worker, mode spool is
// refused ([Pipeline.CheckCluster]), an MQTT sink's client id ends
// with the worker's name ([Options.Worker]), and a file sink writes and
// appends to the worker's own file, its name before the extension
// (out.w1.lp for out.lp). A password left out
// is read from [PasswordEnv]. [Built.Run] closes the MQTT sources once the
// topology has drained.
//
// # InfluxDB writes over HTTP
//
// An http source serves InfluxDB's write API (POST /api/v2/write and
// /write, line protocol, gzip) and takes the keys of
// connectors/httpwrite's Config: addr (localhost:8086), state_dir
// (required: the spool that makes a write durable before its 204),
// token, max_body_size, max_in_flight_bytes, backlog (max_backlog_bytes,
// min_free_bytes: the disk quota of the bodies waiting for the pipeline,
// past which writes get 503), retry_after, shutdown_timeout and spool. It
// is a live feed, like MQTT: on the live clock, with
// acking on, one instance, its own state_dir and addr:
//
//	sources:
//	  - name: telegraf
//	    http: {addr: "localhost:8086", state_dir: sensorstorm-state/telegraf, token: "${INFLUX_TOKEN}"}
//
// # PostgreSQL
//
// A postgres sink takes the keys of connectors/postgres's Config: url,
// table, batch_size and write_timeout:
//
//	sink:
//	  postgres: {url: "postgres://sensorstorm@localhost/metrics", table: readings}
//
// # InfluxDB
//
// An influxdb sink takes the keys of connectors/influxdb's Config: url
// (the write URL, 1.x's /write?db=NAME or 2.x's
// /api/v2/write?org=ORG&bucket=BUCKET), token, username, password,
// precision, batch_size, flush_interval, gzip and timeout:
//
//	sink:
//	  influxdb: {url: "http://localhost:8086/write?db=sensors", gzip: true}
//
// # Defaults
//
// Every bolt instance forwards its watermark to the instances downstream,
// held back by what its operation still holds (an open window's result),
// so bolts downstream of a window release its results as soon as the
// window closes, without raised idle timeouts. A pipeline that replays
// files is a replay (topology.Config.Replay): its output is a function of
// the recordings, the same at every speed, and its inputs never count as
// idle. With acking on, the hard timeout outlasts the longest window,
// since a window holds its inputs' trees open until it fires.
//
// # Your own types
//
// Operation, source and sink types and groupings are looked up in one
// registry per kind, which the built-ins above are the first entries of:
// RegisterOperation, RegisterSource, RegisterSink and RegisterGrouping add
// a program's own, named in files like the built-ins (docs/pipelines.md,
// "Your own operations, sources and sinks").
//
// The command runs pipeline files: sensorstorm run and sensorstorm
// validate.
package pipeline
