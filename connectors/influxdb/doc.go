// Package influxdb writes particles to a server that speaks InfluxDB's
// write API, as line protocol in batches: InfluxDB 1.x (POST /write),
// InfluxDB 2.x and 3.x (POST /api/v2/write), and servers that take the
// same writes, such as VictoriaMetrics, QuestDB and Telegraf's listener.
//
// The Sink is configured with the write URL as InfluxDB's clients give it:
//
//	http://localhost:8086/write?db=sensors                      1.x: db, and optionally rp
//	http://localhost:8086/api/v2/write?org=acme&bucket=sensors  2.x: org (or orgID) and bucket
//
// with a token (Authorization: Token ...) or a username and password
// (basic authentication, or user:password@ in the URL), a precision, a
// batch size and interval, and optionally gzip.
//
// # Acknowledgement and failures
//
// The Sink holds every input and acknowledges it only once the server
// took its line: it answered 204 to the write, or named other lines in a
// partial write. It writes a batch when it is full, when it is as old as
// the flush interval (at the next tick or watermark) and at the end of the
// stream. What each answer does:
//
//   - 204: every line of the batch is acknowledged.
//   - 400 or 422, a partial write: the lines the server names are
//     dead-lettered (operation.ErrRejected, with the server's message in a
//     *ServerError) and the rest acknowledged. InfluxDB 1.x quotes the
//     lines it cannot parse and names the field or tag of the points it
//     dropped (a field type conflict: the lines of that measurement whose
//     field has another type); 2.x and sensorstorm's own endpoint number
//     the lines. When the answer names fewer lines than the server says it
//     dropped, the rest of the batch is written again; when it names none,
//     each half in turn, down to the lines refused alone. InfluxDB
//     overwrites a point written again with the same values, so nothing
//     is stored twice.
//   - 413: the batch is written in halves; a line too large alone is
//     dead-lettered.
//   - 429, 5xx (503 among them) and network errors, timeouts included:
//     an outage. Nothing is acknowledged or dead-lettered; the call fails
//     with operation.ErrDestination, which the engine retries with
//     backoff while the bolt takes no input (backpressure), and gives up
//     on after its give-up time (topology.ErrGaveUp, naming the last
//     error). A Retry-After in the answer is honoured: no write is made
//     before it passed.
//   - 401, 403, 404 (no such database or bucket) and other answers: the
//     server refuses for good, and the run stops at once
//     (operation.ErrRefused) with the server's message.
//
// A particle line protocol cannot represent (a non-finite float, a name
// with a control character) is dead-lettered when it comes.
//
// # What it is not
//
// It does not create databases or buckets, nor read anything back: a
// server that answers 204 and drops lines (VictoriaMetrics skips lines it
// cannot parse and logs them) is taken at its word. A write that the
// server took but whose answer was lost (a timeout, a connection cut) is
// written again: InfluxDB overwrites the point with itself, while
// VictoriaMetrics keeps both samples unless it deduplicates
// (-dedup.minScrapeInterval). It keeps no state across runs: what it had
// not written when the process ended is not acknowledged, and its source
// delivers it again.
//
// # Checkpoints
//
// With checkpoints the Sink needs no snapshot and is exactly once in
// effect on InfluxDB: a restored run writes again what was written after
// the checkpoint it is restored from, and InfluxDB overwrites each point
// (measurement, tags and time) with the same fields, so the database ends
// as after a run never killed. A server that keeps both samples of a
// point written twice (VictoriaMetrics without deduplication) gets them
// at least once.
//
// See DESIGN.md, "Failures" and "Checkpoints and exactly-once output".
package influxdb
