package metrics

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Namespace prefixes every metric name.
const Namespace = "sensorstorm"

// Collector is a prometheus.Collector of one topology's figures, read at
// scrape time. It is safe for concurrent use.
type Collector struct {
	topo topology.View
	now  func() time.Time

	in, out, processed, meta, duplicates, late, invalid, errs, panics *prometheus.Desc
	behind, full, destRetries                                         *prometheus.Desc
	buffered, bufferedBytes, watermark, lag                           *prometheus.Desc
	acked, failed, retried, dead                                      *prometheus.Desc
	pending, pendingCap, stale                                        *prometheus.Desc
	ckptID, ckptAge, ckptDuration, ckptBytes, ckpts                   *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector of topo's figures. now gives the wall clock for
// the watermark lag; nil means time.Now.
func New(topo topology.View, now func() time.Time) *Collector {
	if now == nil {
		now = time.Now
	}
	comp := []string{"component"}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	return &Collector{
		topo: topo, now: now,
		in:            desc("particles_in_total", "Particles received by the component.", comp...),
		out:           desc("particles_out_total", "Particles emitted by the component.", comp...),
		processed:     desc("processed_total", "Data particles given to the component's operation.", comp...),
		meta:          desc("meta_total", "Meta particles handled and forwarded.", comp...),
		duplicates:    desc("duplicates_total", "Extra copies of meta particles dropped.", comp...),
		late:          desc("late_total", "Data particles older than their input's high-water mark minus the window.", comp...),
		behind:        desc("behind_total", "Data particles older than what was released after an idle input stopped holding the watermark.", comp...),
		full:          desc("full_buffers_total", "Times a synchronization buffer filled and its instance stopped taking input.", comp...),
		destRetries:   desc("destination_retries_total", "Calls retried because their destination failed.", comp...),
		invalid:       desc("invalid_total", "Bad input: undecodable, or too far ahead of the stream clock.", comp...),
		errs:          desc("errors_total", "Inputs the operation failed.", comp...),
		panics:        desc("panics_total", "Inputs the operation panicked on.", comp...),
		buffered:      desc("buffered_particles", "Particles waiting in the component's synchronization buffers.", comp...),
		bufferedBytes: desc("buffered_bytes", "Estimated bytes of the particles waiting in the component's synchronization buffers.", comp...),
		watermark:     desc("watermark_seconds", "Highest watermark of the component's instances, Unix seconds.", comp...),
		lag:           desc("watermark_lag_seconds", "Wall clock minus the component's watermark.", comp...),
		acked:         desc("acked_total", "Trees of the source that completed.", comp...),
		failed:        desc("failed_total", "Failed attempts of the source's trees, by reason.", "component", "reason"),
		retried:       desc("retried_total", "Particles the source emitted again after a failure.", comp...),
		dead:          desc("dead_letters_total", "Particles given up on and dead-lettered: a source's trees, a bolt's untracked inputs its operation failed.", comp...),
		pending:       desc("pending_trees", "Trees not finished yet."),
		pendingCap:    desc("pending_trees_max", "The bound on pending trees: max_pending times the source instances."),
		ckptID:        desc("checkpoint_last_id", "Id of the newest complete checkpoint."),
		ckptAge:       desc("checkpoint_age_seconds", "Time since the newest checkpoint of this run completed."),
		ckptDuration:  desc("checkpoint_duration_seconds", "How long the newest checkpoint took from its start to its completion."),
		ckptBytes:     desc("checkpoint_bytes", "Bytes of the newest checkpoint's snapshots."),
		ckpts:         desc("checkpoints_total", "Checkpoints of this run, by outcome.", "outcome"),
		stale:         desc("stale_acks_total", "Acks and fails for trees that had already finished."),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.in, c.out, c.processed, c.meta, c.duplicates, c.late, c.invalid, c.errs, c.panics,
		c.behind, c.full, c.destRetries,
		c.buffered, c.bufferedBytes, c.watermark, c.lag, c.acked, c.failed, c.retried, c.dead, c.pending, c.pendingCap, c.stale,
		c.ckptID, c.ckptAge, c.ckptDuration, c.ckptBytes, c.ckpts} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, name := range c.topo.Components() {
		s := c.topo.Stats(name)
		counter(c.in, s.In.Load(), name)
		counter(c.out, s.Out.Load(), name)
		counter(c.processed, s.Processed.Load(), name)
		counter(c.meta, s.Meta.Load(), name)
		counter(c.duplicates, s.Duplicates.Load(), name)
		counter(c.late, s.Late.Load(), name)
		counter(c.behind, s.Behind.Load(), name)
		counter(c.full, s.FullBuffers.Load(), name)
		counter(c.destRetries, s.DestinationRetries.Load(), name)
		counter(c.invalid, s.Invalid.Load(), name)
		counter(c.errs, s.Errors.Load(), name)
		counter(c.panics, s.Panics.Load(), name)
		counter(c.acked, s.Acked.Load(), name)
		counter(c.retried, s.Retried.Load(), name)
		counter(c.dead, s.DeadLettered.Load(), name)
		for r := range s.FailedBy {
			n := s.FailedBy[r].Load()
			// Index 0 is no reason: only a failure without one lands there.
			if r == 0 && n == 0 {
				continue
			}
			counter(c.failed, n, name, acker.Reason(r).String())
		}
		gauge(c.buffered, float64(s.Buffered.Load()), name)
		gauge(c.bufferedBytes, float64(s.BufferedBytes.Load()), name)
		// A watermark of zero was never set; MaxInt64 marks the end of
		// the stream: neither is a point in time.
		if wm := s.Watermark.Load(); wm != 0 && wm != math.MaxInt64 {
			gauge(c.watermark, float64(wm)/1e9, name)
			gauge(c.lag, now.Sub(time.Unix(0, wm)).Seconds(), name)
		}
	}
	a := c.topo.AckStats()
	gauge(c.pending, float64(a.Pending))
	gauge(c.pendingCap, float64(a.MaxPending))
	counter(c.stale, a.Stale)
	if cs := c.topo.Checkpoints(); cs.Enabled {
		gauge(c.ckptID, float64(cs.Last))
		if !cs.LastAt.IsZero() {
			gauge(c.ckptAge, now.Sub(cs.LastAt).Seconds())
			gauge(c.ckptDuration, cs.Duration.Seconds())
			gauge(c.ckptBytes, float64(cs.Bytes))
		}
		counter(c.ckpts, cs.Completed, "completed")
		counter(c.ckpts, cs.Failed, "failed")
	}
}
