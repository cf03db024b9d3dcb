// Package statuspage serves a live status page of a running topology: the
// pipeline as a graph with each component's rates, buffer depth, watermark
// lag and late, invalid and dead-lettered counts; recent values of each
// sensor series; a replay's position, speed and ETA; and a panel for each
// source or sink with a state of its own (a [Reporter]: an MQTT client's
// brokers, an HTTP endpoint's requests, a spool's backlog).
//
// A [Server] is an http.Handler; its Run makes the updates:
//
//	page, err := statuspage.New(statuspage.Config{Topology: topo, Title: "ingest"})
//	if err != nil {
//		return err
//	}
//	go page.Run(ctx) // a Snapshot every second to the browsers on /events
//	return http.ListenAndServe("localhost:8080", page)
//
// Figures are read from topology.ComponentStats, the counters the engine
// keeps anyway, so the page costs the pipeline nothing per particle and
// shows the same numbers as the Prometheus metrics it also serves at
// /metrics. A client too slow for the updates skips some: each update is
// a whole [Snapshot], and the newest replaces one not yet sent. The
// sensor plots come from a [Tap], which samples particles where the
// sources emit them, a bounded number per series and update. The page is
// plain HTML, JavaScript and SVG embedded in the binary: it needs no
// network access and no build step.
//
// The page knows no connector: any source or sink that implements
// Reporter, whose methods take standard types only, has a panel, found
// among the instances of the topology's components (Config.Instances).
//
// # What it is not
//
// It is not a monitoring system: it keeps no history beyond the few dozen
// points of each plot, and forgets everything when the run ends; scrape
// /metrics with Prometheus for that. It is not a way to look at every
// particle: plots are samples, and a series beyond TapConfig.MaxSeries is
// only counted. It has no authentication: it listens where the command
// tells it (localhost by default) and changes nothing unless
// Config.Control is set.
package statuspage
