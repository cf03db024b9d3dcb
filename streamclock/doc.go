// Package streamclock is the time of a run: the stream clock, and the wall
// clock beneath it.
//
// Each run has one stream clock ([Clock]), injected into every component
// of the engine whose results depend on time. Live it is the
// wall clock ([Live]). In a replay it is the replay's position: it runs at
// the replay speed, stands still while the replay is paused and, unpaced,
// follows what the replay has emitted. Idle timeouts, processing-time
// timers, TTL eviction and the far-future bound of the synchronization
// buffer all read it, so a replay at 1000x behaves like the live run, only
// faster, and a pause stops them all at once.
//
// Wall time itself comes from a [Wall], which tests replace with a [Fake]:
// the engine's timeouts (draining, acking, idle inputs) read it. What
// talks to a server (MQTT reconnects, JetStream publishes, cluster leases,
// checkpoint garbage collection) keeps to the system time, as the server
// does.
//
// # What it is not
//
// A stream clock does not pace anything: the replay source paces itself
// and is the clock of its run. Event-time progress (watermarks) is not the
// clock's business either; it comes from the data.
//
// See the repository's DESIGN.md, "Stream clock and replay".
package streamclock
