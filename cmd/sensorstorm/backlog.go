package main

import (
	"fmt"
	"log/slog"

	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/spool"
)

// backlogAttrs returns the attributes of a closing line that give what
// waits in b's spool, or none if b has no spool.
func backlogAttrs(b metrics.Backlogged) []slog.Attr {
	st, ok := b.BacklogStats()
	if !ok {
		return nil
	}
	return []slog.Attr{slog.Int64("backlog", st.Records), slog.Int64("backlog_bytes", st.Bytes)}
}

// writeBacklogKept says, if b has a backlog left at exit, that it waits
// in the spool in where and comes first at the next start. what names the
// source, such as "ingest: mqtt".
func writeBacklogKept(r reporter, what string, b metrics.Backlogged, where string) {
	st, ok := b.BacklogStats()
	if !ok || st.Records == 0 {
		return
	}
	r.prose(fmt.Sprintf("%s: backlog of %d messages (%d bytes) kept in the spool in %s: processed first at the next start",
		what, st.Records, st.Bytes, where))
}

// pipelineBacklogs returns the backlogs of the spooled sources of p, by
// name, as topo reports them summed over their instances.
func pipelineBacklogs(p *pipeline.Pipeline, topo *pipeline.Built) map[string]metrics.Backlogged {
	bls := map[string]metrics.Backlogged{}
	for _, s := range p.Sources {
		if s.MQTT == nil && s.HTTP == nil {
			continue
		}
		name := s.Name
		bls[name] = metrics.BacklogFunc(func() (spool.BacklogStats, bool) { return topo.BacklogStats(name) })
	}
	return bls
}
