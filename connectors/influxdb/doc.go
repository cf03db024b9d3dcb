// Package influxdb writes particles to a server that speaks InfluxDB's
// write API, as line protocol in batches: InfluxDB 1.x (POST /write),
// InfluxDB 2.x and 3.x (POST /api/v2/write), and servers that take the
// same writes, such as VictoriaMetrics, QuestDB and Telegraf's listener.
//
// A [Sink] is an operation, configured with the write URL as InfluxDB's
// clients give it (1.x: /write?db=NAME, optionally rp; 2.x:
// /api/v2/write?org=ORG&bucket=BUCKET, or orgID):
//
//	sink, err := influxdb.NewSink(influxdb.Config{
//		URL:   "http://localhost:8086/api/v2/write?org=acme&bucket=sensors",
//		Token: os.Getenv("INFLUX_TOKEN"),
//	})
//	if err != nil {
//		return err
//	}
//	defer sink.Close()
//	topo.AddBolt("influx", operation.Stateless(sink), topology.BoltConfig{}).
//		Input("mean", topology.Global())
//
// with a token (Authorization: Token ...) or a username and password
// (basic authentication, or user:password@ in the URL), a precision, a
// batch size and interval, and optionally gzip.
//
// The Sink holds every input and acknowledges it only once the server
// took its line. A line the server names as bad is dead-lettered, the
// rest acknowledged; an outage (429, 5xx, a network error) is retried by
// the engine with backoff while the bolt takes no input; a refusal for
// good (401, 403, 404) stops the run with the server's message. The
// Sink's documentation tells what each answer does, docs/sinks.md how a
// pipeline uses it.
//
// # What it is not
//
// It does not create databases or buckets, nor read anything back: a
// server that answers 204 and drops lines (VictoriaMetrics skips lines it
// cannot parse and logs them) is taken at its word. It keeps no state
// across runs: what it had not written when the process ended is not
// acknowledged, and its source delivers it again. With checkpoints it is
// exactly once in effect on a server that overwrites a point written
// again, as InfluxDB does, and at least once elsewhere. See DESIGN.md, "Failures" and "Checkpoints and
// exactly-once output".
package influxdb
