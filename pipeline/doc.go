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
//	    file: {paths: [testdata/library1-r1.lp], speed: max}
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
// [Pipeline.Build] turns a parsed pipeline into a [Built] topology ready to
// Run. Relative paths are resolved against [Options.Dir].
//
// # MQTT
//
// An mqtt source or sink takes the keys of connectors/mqtt's Config or
// SinkConfig (broker or brokers, client_id, username, password, tls,
// keep_alive, ...; for a source topics, qos, mode, state_dir, payload with
// format, precision, topic_tags and json; for a sink topic, qos, retain,
// format, precision), checked key by key like the rest of the file:
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
// id and state directory suffixed with their index. A password left out
// is read from [PasswordEnv]. [Built.Run] closes the MQTT sources once the
// topology has drained.
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
// The command runs pipeline files: sensorstorm run and sensorstorm
// validate.
package pipeline
