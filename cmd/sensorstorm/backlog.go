package main

import (
	"fmt"
	"io"

	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/spool"
)

// backlogFields returns the fields of a closing line that give what waits
// in b's spool, with a leading space, or "" if b has no backlog.
func backlogFields(b metrics.Backlogged) string {
	st, ok := b.BacklogStats()
	if !ok {
		return ""
	}
	return fmt.Sprintf(" backlog=%d backlog_bytes=%d", st.Records, st.Bytes)
}

// writeBacklogKept says, if b has a backlog left at exit, that it waits
// in the spool in where and comes first at the next start. what names the
// source, such as "ingest: mqtt".
func writeBacklogKept(w io.Writer, what string, b metrics.Backlogged, where string) {
	st, ok := b.BacklogStats()
	if !ok || st.Records == 0 {
		return
	}
	fmt.Fprintf(w, "%s: backlog of %d messages (%d bytes) kept in the spool in %s: processed first at the next start\n",
		what, st.Records, st.Bytes, where)
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
