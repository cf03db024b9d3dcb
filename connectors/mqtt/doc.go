// Package mqtt connects topologies to MQTT brokers: [Source] ingests
// sensor feeds with no loss, [Sink] publishes results. It uses
// github.com/eclipse/paho.mqtt.golang (MQTT 3.1.1).
//
// # Source
//
// A Source subscribes to topic filters (QoS 1 by default; 0 and 2 too)
// with a persistent session under a stable client id, so that the broker
// keeps what arrives while the process is down. It subscribes again at a
// connection only where the broker did not keep the session or the
// filters changed: subscribing again makes the broker resend every
// retained message. It speaks TLS and username/password. Its one message
// handler is registered before it connects: the messages a persistent
// session queued arrive at once. The handler only queues a message and
// returns, so that paho's keepalive never waits for the pipeline.
//
// # Connecting
//
// Sources and sinks make every connection themselves, paho's retries being
// off. Each failed attempt is logged with the broker's reason; attempts
// are ReconnectWait (1s) apart, doubling up to MaxReconnectInterval, the
// first connection included; a lost connection is retried at once. A
// refusal that retrying cannot fix (bad credentials, not authorized,
// client id rejected, an untrusted broker certificate) is not retried:
// Source.Run returns a *ConnectError. Broker URLs with another scheme than
// paho's (tcp, ssl, tls, mqtts, ws, wss, unix...) fail validation with
// ErrBrokerURL.
//
// A broker gives a client id's session to whichever client connected last.
// Two processes with the same client id take it from each other over and
// over, each losing its connection soon after making it: from the third
// time in a row each loss is logged as an error naming the client id, and
// with MaxTakeovers the client stops with ErrTakeover.
//
// The broker keeps a persistent session's subscriptions across runs, and
// MQTT 3.1.1 cannot list them: a Source records its filters in StateDir
// and unsubscribes from those a later run with the same client id no
// longer has. A message that no configured filter matches is acknowledged
// and dropped (Stats.Unwanted) all the same.
//
// Payloads are line protocol (one or more lines) or JSON (an object or an
// array of objects; see [JSONConfig]). A template such as
// "sensors/{room}/{sensor}" turns topic segments into tags. Shared
// subscriptions ($share/GROUP/FILTER) let instances with different client
// ids split a feed.
//
// Bad input (a malformed line, a JSON object without fields, a timestamp in
// the wrong format) is rejected to the topology's dead-letter sink with a
// *particle.DecodeError naming the topic, line and column, and its own
// text: the bad line, the bad element of a JSON array, or the payload when
// it does not parse at all; it is counted, the rest of the payload goes on, and the message
// is acknowledged like any other: never redelivered forever, never
// blocking the stream. A whole message is bad input when its topic does
// not match TopicTags (ErrTopicMismatch) or its payload is larger than
// MaxPayload (ErrPayloadTooLarge; only its first 256 bytes are kept).
//
// # When a message is acknowledged to the broker
//
// A broker lets a client hold few unacknowledged messages (Mosquitto's
// max_inflight_messages, 20 by default) and queues few more for it
// (max_queued_messages, 1000), dropping the rest silently. A source that
// held the acknowledgement (PUBACK) of each message until the pipeline
// had processed it, behind a 1s synchronization window, would take about
// 20 messages a second and make the broker drop the rest. The [Mode]
// chooses:
//
//   - ModeSpool (the default): a message is appended to a local
//     write-ahead spool (package spool) in StateDir; a writer makes the
//     messages that arrived meanwhile durable with one fsync (group
//     commit, 0.1 to 0.3 ms on an idle SSD) and starts the next fsync as
//     soon as that one ended and anything new arrived. It acknowledges
//     each batch, in arrival order, as soon as its fsync returned, and a
//     second goroutine queues it for the pipeline: a broker holding 20
//     messages unacknowledged waits for one fsync at a time, not for the
//     pipeline nor a goroutine hand-off. Particles are emitted
//     afterwards, and a message is marked complete in the spool when all
//     its particles were processed; complete segments are deleted. At
//     start, the messages a previous run did not complete are emitted
//     again before any new one. A crash, even SIGKILL, loses nothing:
//     what was not acknowledged the broker sends again, what was
//     acknowledged the spool replays. Duplicates are possible
//     (Stats.Replayed, Stats.Redelivered), loss is not. Works with a
//     stock broker at close to a bare subscriber's rate. Costs local disk
//     (what waits for the pipeline, plus up to 1 MiB preallocated; see
//     spool.Config) and one fsync per batch.
//   - ModeTree: a message is acknowledged once all its particles were
//     processed (their trees completed), as an in-order prefix since
//     MQTT 3.1.1 requires acknowledgements in arrival order. No local
//     state, no loss, but throughput is bounded by max_inflight_messages
//     divided by the processing latency (window included): raise
//     max_inflight_messages (for example to 10000, or 0 for no limit) and
//     max_queued_messages on the broker, or it takes about 20 messages a
//     second with a 1s window and the broker drops beyond its queue. The
//     engine reports completions without waiting: the source's own
//     goroutine sends the acknowledgements.
//   - ModeReceipt: a message is acknowledged when the pipeline takes it.
//     Fast with a stock broker and no local state, but a crash loses the
//     messages taken and not yet processed: at-most-once for those.
//
// All modes need a persistent session (CleanSession false, the default)
// and a stable ClientID to survive restarts; with QoS 0 the broker sends
// each message once and nothing protects it. Memory is bounded: at most
// MaxBuffered messages (and MaxBufferedBytes of payload) wait in memory
// between the broker and the pipeline; add what the broker sends
// unacknowledged (max_inflight_messages; Mosquitto 2.0.11 was seen to
// exceed it, up to a few hundred, after bursts of acknowledgements) times
// the largest message it lets through (message_size_limit).
//
// In ModeSpool the spool is the buffer: a message is acknowledged once
// durable however far behind the pipeline is, memory holds MaxBuffered of
// what waits and the rest stays on disk, read back in order when the
// pipeline gets to it (a [spool.Backlog]), so a slow or stalled pipeline
// grows the spool, not the broker's queue. Source.BacklogStats reports
// it; it is logged when it spills to disk and at each doubling. At the
// disk quota (Backlog.MaxBytes, max_backlog_bytes: by default half the
// space free when the source starts) or below Backlog.MinFree
// (min_free_bytes) of free space, the source stops acknowledging and logs
// it at error level. What waits at exit is processed first at the next
// start.
//
// In the other modes, beyond MaxBuffered the source stops acknowledging
// and the broker stops sending (QoS 0 messages are dropped and counted
// instead): a slow pipeline makes the broker queue, and a stock Mosquitto
// drops beyond 1000 queued messages (max_queued_messages). In every mode
// the broker queues while the process is down: size max_queued_messages
// for the longest restart. Mosquitto 2.0 also loses, when it is stopped,
// the messages it has in flight to a client
// (eclipse-mosquitto/mosquitto#2811), whatever the client does.
//
// After a crash, what the broker sends again may be older than what the
// spool's backlog already released downstream: with a late policy of
// drop, a synchronization buffer would drop it. Use syncbuffer.LatePass
// (the ingest command's default) where that matters.
//
// Run the Source with acking on (topology.AckingConfig.Enabled): its
// guarantees rest on learning when trees complete. The connection
// outlives Run so that trees completing while the topology drains are
// still acknowledged; Close disconnects and closes the spool.
//
// # Sink
//
// A Sink publishes each particle as line protocol (or JSON) to a topic
// made from a template such as "results/{sensor}", at QoS 1 by default. A
// tag value fills one topic level: "/", "+", "#", NUL and "%" in it are
// percent-encoded ("in/x" gives "results/in%2Fx"). A particle without a
// tag the template names is dead-lettered and acknowledged, not retried.
// It holds each input until the broker confirmed the publication, so with
// QoS 1 or 2 a tree completes only once its results are with the broker;
// MaxInflight bounds the publications waiting (backpressure). While the
// connection is down Process waits, and publications made before the loss
// are sent again on reconnection.
//
// With checkpoints the Sink is at least once, not exactly once: a broker
// cannot take a publication back, so what it published after the
// checkpoint a run is restored from is published again by the restored
// run, with the same particles (the same identities, event times and
// values), and receivers that deduplicate drop it. It needs no snapshot.
//
// This package is not a broker, does not speak MQTT 5 (no receive
// maximum, no message expiry), and does not deduplicate what a crash makes
// it process twice. See DESIGN.md, "MQTT" and "Bad input".
package mqtt
