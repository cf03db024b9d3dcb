package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorstorm/sensorstorm/spool"
)

// Backlogged is a source whose input waits in a spool for the pipeline;
// *mqtt.Source is one. BacklogStats reports false while it has no backlog
// (before it runs, or in a mode without a spool).
type Backlogged interface {
	BacklogStats() (spool.BacklogStats, bool)
}

// BacklogFunc adapts a function to Backlogged, such as a summary over
// the instances of a source.
type BacklogFunc func() (spool.BacklogStats, bool)

// BacklogStats implements Backlogged.
func (f BacklogFunc) BacklogStats() (spool.BacklogStats, bool) { return f() }

// Backlogs is a prometheus.Collector of the backlogs of sources, labelled
// by component, read at scrape time. It is safe for concurrent use.
type Backlogs struct {
	sources map[string]Backlogged
	now     func() time.Time

	records, bytes, age, onDisk, readBack, full, drain, catchUp *prometheus.Desc
}

var _ prometheus.Collector = (*Backlogs)(nil)

// NewBacklogs returns a Collector of the backlogs of sources, by
// component name. now gives the wall clock for the age of the oldest
// message; nil means time.Now.
func NewBacklogs(sources map[string]Backlogged, now func() time.Time) *Backlogs {
	if now == nil {
		now = time.Now
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "backlog", name), help, []string{"component"}, nil)
	}
	return &Backlogs{
		sources:  sources,
		now:      now,
		records:  desc("messages", "Messages the source made durable that wait in its spool for the pipeline."),
		bytes:    desc("bytes", "Bytes in the spool of the messages waiting."),
		age:      desc("age_seconds", "How long the oldest message waiting was received ago; 0 when none waits."),
		onDisk:   desc("on_disk_messages", "Messages waiting on disk only, to be read back."),
		readBack: desc("read_back_total", "Messages read back from disk."),
		full:     desc("at_quota", "1 while the backlog is at its disk quota or the disk at its floor of free space: the source acknowledges no input."),
		drain:    desc("drain_rate", "Messages handed to the pipeline per second over the last few seconds."),
		catchUp:  desc("catch_up_seconds", "Estimated time until the pipeline catches up at the current rates; 0 when nothing waits or the backlog does not shrink."),
	}
}

// Describe implements prometheus.Collector.
func (c *Backlogs) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.records, c.bytes, c.age, c.onDisk, c.readBack, c.full, c.drain, c.catchUp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Backlogs) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for name, src := range c.sources {
		st, ok := src.BacklogStats()
		if !ok {
			continue
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
		}
		gauge(c.records, float64(st.Records))
		gauge(c.bytes, float64(st.Bytes))
		age := 0.0
		if st.Oldest != 0 {
			age = max(0, now.Sub(time.Unix(0, st.Oldest)).Seconds())
		}
		gauge(c.age, age)
		gauge(c.onDisk, float64(st.OnDisk))
		ch <- prometheus.MustNewConstMetric(c.readBack, prometheus.CounterValue, float64(st.ReadBack), name)
		full := 0.0
		if st.Full {
			full = 1
		}
		gauge(c.full, full)
		gauge(c.drain, st.DrainRate)
		gauge(c.catchUp, st.CatchUp.Seconds())
	}
}
