// Package httpwrite is a source that speaks InfluxDB's write API, so that
// Telegraf's influxdb outputs, the official InfluxDB client libraries and
// device firmware send line protocol to a pipeline unchanged.
//
// A Source serves
//
//	POST /api/v2/write?bucket=B&org=O&precision=ns|us|ms|s   (InfluxDB 2.x)
//	POST /write?db=D&precision=n|u|ms|s                       (InfluxDB 1.x)
//	GET  /ping, GET /health, GET /ready                       (clients' health checks)
//	GET  /api/v2/buckets?name=B                               (a bucket check before writing)
//	GET|POST /query?q=SHOW DATABASES | CREATE DATABASE "D"    (1.x clients' database check)
//
// The probes answer minimally and truthfully: a write to any bucket or
// database is taken, so the bucket asked for exists, CREATE DATABASE
// succeeds, and the buckets and databases listed are those written to
// (or created) since the start. Any other query is a 400 that says so,
// any other path a 404 naming those served.
//
// Bodies are line protocol, plain or with Content-Encoding: gzip, decoded
// by particle.Decoder one line at a time: a gzip body is kept, spooled and
// decoded as sent, never inflated whole, and its inflated bytes count
// against Config.MaxInFlightBytes as they are decoded. A line without a
// timestamp takes the time the write was received, truncated to the
// write's precision (precision=s gives whole seconds), as InfluxDB gives
// it the server's. With Config.Token set, a
// write must carry "Authorization: Token <token>"; the 1.x API also takes
// the token as the password of Basic authentication or of the p query
// parameter.
//
// Guarantees. A write is answered 204 only once its body is durable in
// the spool in Config.StateDir (one fsync shared by the writes that
// arrive together), the same guarantee as a PUBACK in the MQTT source's
// spool mode: a process killed after the answer replays the body at its
// next start, and one killed before it never answered, so the client
// sends the body again. Nothing is lost; a body may be processed twice.
// A body leaves the spool once every particle of it was processed (run
// the topology with acking on) or, in a run that takes checkpoints
// (Config.Checkpoints), once a checkpoint covers it: the source is then a
// topology.Positioner, a restored run resumes at the checkpoint's body
// and particle, and no body is processed twice.
//
// The spool is the backlog. A body durable is answered at once, however
// far behind the pipeline is; the pipeline takes the bodies at its own
// pace, in the order they became durable, those of a previous run first.
// Memory holds a bounded part of the backlog (Config.MaxInFlightBytes);
// the rest waits on disk and is read back in order (Source.BacklogStats).
// A stalled sink or a long window grows the backlog, not the clients'
// refusals, up to the disk quota (Config.Backlog).
//
// Answers, as InfluxDB gives them:
//
//   - 204: every line written.
//   - 400: bad lines: malformed, or stamped more than Config.FutureBound
//     after the write was received, which the pipeline would reject
//     (InfluxDB would store them; answering 204 and dropping them would
//     tell the client they were written). The valid lines of the body
//     are written (durable before the answer, as with 204) and the bad
//     ones are not: the JSON
//     body names the line and column of each, the first in InfluxDB's
//     "line" member, all in an "errors" list. Each bad line is also
//     counted and sent to the dead-letter sink with its position
//     (topology.SourceEmitter.Reject), like any bad input. A missing
//     bucket or db, an unknown precision and a broken gzip stream are
//     400 too, with nothing written.
//   - 401: the token is missing or wrong.
//   - 413: a body larger than Config.MaxBodySize after decompression;
//     the message names the limit.
//   - 503 with Retry-After: the backlog is at its disk quota (the wait
//     asked is the time the pipeline takes to make room for the body,
//     at its drain rate), the bodies being received hold
//     Config.MaxInFlightBytes already, the process is stopping, or the
//     spool cannot be written (which also stops Run with the error).
//     InfluxDB's clients write again after the wait. A pipeline that is
//     behind is no reason for a 503.
//
// What it is not: not a database (nothing is stored or queried; the
// other InfluxDB endpoints are absent), not an InfluxDB authorization
// system (one token for every bucket; bucket, org and db are recorded in
// dead letters and otherwise ignored), and not TLS-terminating (put a
// reverse proxy in front for HTTPS). It does not deduplicate: a client
// that retries a write whose answer it lost sends its points twice, as
// it would to InfluxDB, where the second write overwrites the first;
// downstream, a sink keyed by series and time (connectors/postgres) or
// operation.Dedup makes it exactly once.
//
// See DESIGN.md, "MQTT" (acknowledge only what can no longer be lost) and
// "Bad input".
package httpwrite
