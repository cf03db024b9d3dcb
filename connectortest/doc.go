// Package connectortest is a conformance suite for connectors: sources
// and sinks that every connector, today's and later ones, runs in its
// tests, in the spirit of Watermill's TestPubSub and testing/slogtest.
//
// A connector's test gives TestSource or TestSink a Features value and a
// harness: a small adapter that makes the connector's Source or Sink and
// publishes to, or reads from, what stands behind it (a broker, a file).
// The suite runs its scenarios through a real topology with acking on,
// each as a subtest, and skips those the features or the harness do not
// support:
//
//   - Delivery: every message published arrives.
//   - KillMidStream: for a source, the process running it is killed
//     with SIGKILL mid-stream and started again; every message is
//     delivered (what was acknowledged upstream comes from the source's
//     durable state, the rest from upstream again). For a sink, what it
//     acknowledged is in the destination while the stream still runs,
//     as a process started after a kill would find it.
//   - DestinationFailure: a sink's destination fails for a while;
//     nothing acknowledged is lost, nothing is dead-lettered or failed.
//   - BrokerRestart: the broker stops and starts again mid-stream;
//     every message is delivered.
//   - InOrderAcks: trees complete out of order, yet the source
//     acknowledges upstream in the order messages arrived (MQTT 3.1.1
//     requires PUBACKs in the order of the PUBLISH packets).
//
// The kill scenario runs the source in a child process: the test binary
// itself, started again with -test.run naming the test that called
// TestSource, which then plays the child's part. A harness that makes
// something the child needs (a broker) passes its address through Env.
//
// See DESIGN.md, "Failures" and "MQTT".
package connectortest
