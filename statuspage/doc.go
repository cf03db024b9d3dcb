// Package statuspage serves a live status page of a running topology: the
// pipeline as a graph, each source, bolt and sink with its parallelism,
// groupings, rates, buffer depth, watermark lag, late, invalid and
// dead-lettered counts; recent values of each sensor series with the
// particles that were dead-lettered; a replay's position, speed and ETA,
// with buttons that change it; a panel of each source and sink with a
// state of its own, a [Reporter] (an MQTT client's brokers, an HTTP
// endpoint's requests), with its connections, its counters and, with a
// spool, its backlog (what waits on disk for the pipeline, its age, drain
// rate and time to catch up, marked loudly when at its disk quota). The
// page knows no connector: any that implements Reporter, whose methods
// take standard types only, has a panel, found among the instances of the
// topology's components (Config.Instances).
//
// A [Server] is an http.Handler. Its [Server.Run] makes a [Snapshot] of the
// run every Config.Interval (a second by default) and sends it to every
// browser connected to /events as a server-sent event; when Run ends it
// sends a last one, marked Finished, and the page shows the run's final
// figures instead of a stream cut mid-run. Figures are read
// from topology.ComponentStats, the counters the engine keeps anyway, so
// the page costs the pipeline nothing per particle and shows the same
// numbers as the Prometheus metrics it also serves at /metrics. A client
// too slow for the updates skips some: each update is a whole snapshot,
// and the newest replaces one not yet sent.
//
// The sensor plots need particles, which a [Tap] samples where the sources
// emit them: at most TapConfig.PointsPerTick points per series per update,
// for at most TapConfig.MaxSeries series, so the sample is bounded
// whatever the rate; while no browser is connected a particle costs one
// atomic load. Wrapping the dead-letter sink with [Tap.DeadLetters] marks
// late and invalid particles on their series' plot and counts dead
// letters per component.
//
// The page is plain HTML, JavaScript and SVG embedded in the binary: it
// needs no network access and no build step.
//
// # The snapshot
//
// /snapshot serves, and /events sends, a [Snapshot] as JSON; times are
// milliseconds since the Unix epoch, durations seconds, and members
// marked omitempty are left out when absent:
//
//	{"title": "ingest sensors/#", "wall": 1764993600000, "stream": 1764993599950,
//	 "control": false, "pending_trees": 12, "max_pending": 10000,
//	 "components": [{"name": "mqtt", "kind": "source", "parallelism": 1,
//	   "in": 0, "out": 5120, "rate_in": 0, "rate_out": 250, "buffered": 0, ...}, ...],
//	 "edges": [{"from": "mqtt", "to": "out", "grouping": "global"}],
//	 "connectors": [{"component": "mqtt", "instance": 0,
//	   "connections": [{"address": "tcp://a:1883", "state": "standby"},
//	                   {"address": "tcp://b:1883", "state": "connected"}],
//	   "counters": [{"name": "received", "value": 5120}, {"name": "acknowledged", "value": 5120}, ...],
//	   "backlog": {"messages": 0, "bytes": 0, "on_disk": 0, "read_back": 0, "age": 0,
//	     "at_quota": false, "drain_rate": 250, "add_rate": 250}}],
//	 "checkpoint": {...}, "replay": {...}, "tap": {...}}
//
// components are the graph's nodes with the engine's counters
// ([ComponentSnapshot]); connectors the panels of the Reporters, in the
// order of components and of their instances ([ConnectorSnapshot]), whose
// counters keep the order the Reporter gave; replay a replay's progress
// ([ReplaySnapshot]), the JSON of connectors/replay's Status with progress
// and eta; tap the sampled plots ([TapSnapshot]); finished marks the last
// snapshot, sent when the run ended.
//
// # What it is not
//
// It is not a monitoring system: it keeps no history beyond the few dozen
// points of each plot, and forgets everything when the run ends; scrape
// /metrics with Prometheus for that. It is not a way to look at every
// particle: plots are samples, and a series beyond MaxSeries is only
// counted. It has no authentication: it listens where the command tells it
// (localhost by default) and changes nothing unless Config.Control is set.
package statuspage
