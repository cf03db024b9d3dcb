// Package statuspage serves a live status page of a running topology: the
// pipeline as a graph, each source, bolt and sink with its parallelism,
// groupings, rates, buffer depth, watermark lag, late, invalid and
// dead-lettered counts; recent values of each sensor series with the
// particles that were dead-lettered; a replay's position, speed and ETA,
// with buttons that change it; an MQTT source's connection, spool and
// backlog (what waits on disk for the pipeline, its age, drain rate and
// time to catch up, marked loudly when at its disk quota).
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
// # What it is not
//
// It is not a monitoring system: it keeps no history beyond the few dozen
// points of each plot, and forgets everything when the run ends; scrape
// /metrics with Prometheus for that. It is not a way to look at every
// particle: plots are samples, and a series beyond MaxSeries is only
// counted. It has no authentication: it listens where the command tells it
// (localhost by default) and changes nothing unless Config.Control is set.
package statuspage
