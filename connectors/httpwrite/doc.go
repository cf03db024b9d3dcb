// Package httpwrite is a source that speaks InfluxDB's write API, so that
// Telegraf's influxdb outputs, the official InfluxDB client libraries and
// device firmware send line protocol to a pipeline unchanged.
//
// A [Source] answers a write only once its body is durable in a local
// spool, and feeds the topology from there:
//
//	src, err := httpwrite.NewSource(httpwrite.Config{
//		Addr:     "localhost:8086",
//		StateDir: "/var/lib/sensorstorm/http",
//		Token:    os.Getenv("SENSORSTORM_HTTP_TOKEN"),
//	})
//	if err != nil {
//		return err
//	}
//	topo, _ := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
//	topo.AddSource("influx", topology.Single(src), topology.SourceConfig{})
//
// It serves
//
//	POST /api/v2/write?bucket=B&org=O&precision=ns|us|ms|s   (InfluxDB 2.x)
//	POST /write?db=D&precision=n|u|ms|s                       (InfluxDB 1.x)
//	GET  /ping, GET /health, GET /ready                       (clients' health checks)
//	GET  /api/v2/buckets?name=B                               (a bucket check before writing)
//	GET|POST /query?q=SHOW DATABASES | CREATE DATABASE "D"    (1.x clients' database check)
//
// with InfluxDB's answers: 204 once every line is durable, 400 naming
// each bad line, 401, 413, and 503 with Retry-After when it cannot take
// the write now, never because the pipeline is behind; the Source's
// documentation lists them.
//
// # Guarantees
//
// A write answered 204 is never lost: a process killed after the answer
// replays the body at its next start, and one killed before it never
// answered, so the client sends the body again. A body may be processed
// twice, unless the run takes checkpoints ([Config.Checkpoints]). The
// spool is the backlog: a pipeline that falls behind grows it on disk,
// and is no reason to refuse a write. See docs/ingest.md.
//
// # What it is not
//
// Not a database (nothing is stored or queried; the other InfluxDB
// endpoints are absent), not an InfluxDB authorization system (one token
// for every bucket; bucket, org and db are recorded in dead letters and
// otherwise ignored), and not TLS-terminating (put a reverse proxy in
// front for HTTPS). It does not deduplicate: a client that retries a
// write whose answer it lost sends its points twice, as it would to
// InfluxDB, where the second write overwrites the first; downstream, a
// sink keyed by series and time (connectors/postgres) or operation.Dedup
// makes it exactly once. See DESIGN.md, "MQTT" (acknowledge only what can
// no longer be lost) and "Bad input".
package httpwrite
