package jetstreamedge

import "github.com/prometheus/client_golang/prometheus"

// Collector exports a Transport's Stats as Prometheus counters, named
// sensorstorm_jetstream_*, next to a worker's topology metrics.
type Collector struct {
	stats *Stats
	descs []counterDesc
}

// counterDesc is one counter and the Stats field it reads.
type counterDesc struct {
	desc *prometheus.Desc
	read func(*Stats) uint64
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector of s.
func NewCollector(s *Stats) *Collector {
	counter := func(name, help string, read func(*Stats) uint64) counterDesc {
		return counterDesc{prometheus.NewDesc(prometheus.BuildFQName("sensorstorm", "jetstream", name), help, nil, nil), read}
	}
	return &Collector{stats: s, descs: []counterDesc{
		counter("published_messages_total", "Messages the server confirmed.", func(s *Stats) uint64 { return s.Published.Load() }),
		counter("published_bytes_total", "Payload bytes of the messages the server confirmed.", func(s *Stats) uint64 { return s.PublishedBytes.Load() }),
		counter("published_particles_total", "Particles in the messages the server confirmed.", func(s *Stats) uint64 { return s.PublishedParticles.Load() }),
		counter("publish_failed_total", "Publishes the server did not confirm, each tried again.", func(s *Stats) uint64 { return s.PublishFailed.Load() }),
		counter("received_messages_total", "Messages taken from the consumers.", func(s *Stats) uint64 { return s.Received.Load() }),
		counter("redelivered_messages_total", "Messages taken that had been delivered before.", func(s *Stats) uint64 { return s.Redelivered.Load() }),
		counter("duplicates_total", "Messages dropped because the checkpoint their unit restored holds them, and particles dropped as copies: received already, or released by the restored state.", func(s *Stats) uint64 { return s.Duplicates.Load() }),
		counter("held_back_messages_total", "Messages that came ahead of an earlier one of their sender and waited for it.", func(s *Stats) uint64 { return s.HeldBack.Load() }),
		counter("gaps_skipped_total", "Times a receiver stopped waiting for missing messages of a sender.", func(s *Stats) uint64 { return s.GapsSkipped.Load() }),
		counter("spare_ends_total", "Ends of stream a unit's copy gave back for another copy, having one from the same input.", func(s *Stats) uint64 { return s.SpareEnds.Load() }),
	}}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d.desc
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range c.descs {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, float64(d.read(c.stats)))
	}
}
