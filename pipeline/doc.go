// Package pipeline reads a pipeline, a topology described in a YAML file,
// checks it and builds it. sensorstorm run and validate use it; a program
// needs three calls:
//
//	p, err := pipeline.Load("mean.yaml")
//	if err != nil {
//		return err // every problem, each with its file, line and column
//	}
//	built, err := p.Build(pipeline.Options{})
//	if err != nil {
//		return err
//	}
//	return built.Run(ctx)
//
// where mean.yaml names its sources, its bolts (inputs with a grouping,
// parallelism, the synchronization buffer's window and late policy, and a
// built-in operation or a sink) and optionally the acking settings:
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
// Sources, operations and sinks take the keys of their packages' configs
// (connectors/mqtt's Config, ops.StatsConfig, ...), checked key by key:
// see docs/pipelines.md and docs/sinks.md.
//
// # Errors before the run
//
// [Parse] reports every problem it finds, each an [*Error] naming the
// file, line and column (pipeline.yaml:12:7: bolt "mean10m": unknown op
// type "window-men" (known: ...)), and also what would fail only when the
// pipeline runs: a cycle among the bolts, broker URLs that name no MQTT
// broker, sizes beyond their maxima ([MaxParallelism], [MaxBytes], ...),
// an unset ${NAME} variable. [Pipeline.Check] adds files that cannot be
// read or created. Relative paths resolve against the pipeline file's
// directory, or [Options.Dir].
//
// # Your own types
//
// Operation, source and sink types and groupings are looked up in one
// registry per kind, which the built-ins are the first entries of:
// [RegisterOperation], [RegisterSource], [RegisterSink] and
// [RegisterGrouping] add a program's own, named in files like the
// built-ins (docs/pipelines.md, "Your own operations, sources and sinks").
//
// # What it is not
//
// A pipeline file describes one topology; it is not a program, and the
// sensorstorm command knows the built-in types only. A topology built in
// Go with package topology needs no file at all.
package pipeline
