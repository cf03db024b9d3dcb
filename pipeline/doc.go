// Package pipeline reads a pipeline, a topology described in a YAML file,
// checks it and builds it.
//
// A pipeline names its sources (recordings replayed at a speed; MQTT
// feeds are an extension point), its bolts (inputs with a grouping,
// parallelism, the synchronization buffer's window and late policy, and
// either a built-in operation or a sink), and optionally the acking
// settings. For example:
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
// [Pipeline.Build] turns a parsed pipeline into a topology.Topology ready to
// Run. Relative paths are resolved against [Options.Dir].
//
// Defaults fit windowed pipelines: bolts downstream of a window wait for
// its sparse results (their idle timeout covers the window); in an unpaced
// replay, whose stream clock is the highest event time seen, inputs never
// count as idle (one merely slower than another would) and particles are
// not bounded in how far ahead of that clock they may be; and with acking on the hard timeout outlasts the longest window,
// since a window holds its inputs' trees open until it fires.
//
// This package does not run pipelines; cmd/sensorstorm does.
package pipeline
