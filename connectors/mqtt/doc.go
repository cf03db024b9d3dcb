// Package mqtt connects topologies to MQTT brokers: a [Source] ingests
// sensor feeds with no loss, a [Sink] publishes results. It speaks MQTT
// 3.1.1 through github.com/eclipse/paho.mqtt.golang.
//
// A Source subscribes with a persistent session under a stable client id,
// so that the broker keeps what arrives while the process is down, and by
// default acknowledges each message once it is durable in a local spool:
//
//	src, err := mqtt.NewSource(mqtt.Config{
//		ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://localhost:1883"}},
//		Topics:     []string{"sensors/#"},
//		StateDir:   "/var/lib/sensorstorm/mqtt",
//		Payload:    mqtt.PayloadConfig{TopicTags: "sensors/{room}/{sensor}"},
//	})
//	if err != nil {
//		return err
//	}
//	topo, _ := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
//	topo.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
//
// Run the Source with acking on: its guarantees rest on learning when the
// trees of its particles complete.
//
// # Acknowledging to the broker
//
// A broker lets a client hold few messages unacknowledged (Mosquitto: 20)
// and drops silently beyond a short queue, so a source cannot hold each
// PUBACK until the pipeline is done with the message. The [Mode] chooses
// the trade-off: [ModeSpool] (the default) acknowledges once the message
// is durable on local disk and loses nothing, even to SIGKILL;
// [ModeTree] acknowledges once all its particles were processed, with no
// local state but a throughput bounded by the broker's in-flight window;
// [ModeReceipt] acknowledges when the pipeline takes it, and a crash
// loses what was in flight. At QoS 1 or 2, ModeSpool and ModeTree may
// process a message twice, never lose one. See docs/ingest.md for the broker settings each
// mode needs.
//
// # Bad input
//
// A malformed line, a JSON object without fields, a timestamp in the wrong
// format, a topic that does not match [PayloadConfig.TopicTags] or a
// payload over [Config.MaxPayload] is rejected to the topology's
// dead-letter sink with an error naming the topic (and a bad line's line
// and column), then counted and acknowledged like any other message:
// never redelivered forever, never blocking the stream. See DESIGN.md, "Bad input".
//
// # What it is not
//
// This package is not a broker and does not speak MQTT 5 (no receive
// maximum, no message expiry). It does not deduplicate what a
// crash makes it process twice. Its Sink is exactly once only with
// checkpoints, and then but for one moment (a kill between the broker's
// confirmations and the mark that records them); it cannot fence a
// process cut off from its cluster that still publishes. [Probe] checks that a broker accepts a connection; it
// does not subscribe. See DESIGN.md, "MQTT".
package mqtt
