// Package metrics exposes the figures of a running topology to Prometheus.
//
// [Collector] is a prometheus.Collector that reads topology.Stats of every
// component, and the acker's figures, when Prometheus scrapes: the engine's
// hot path only increments the atomic counters it keeps anyway. Register
// it with a prometheus.Registry and serve that with promhttp.
//
// Metrics, labelled by component (and reason for failures):
//
//	sensorstorm_particles_in_total, sensorstorm_particles_out_total,
//	sensorstorm_processed_total, sensorstorm_meta_total,
//	sensorstorm_duplicates_total, sensorstorm_late_total,
//	sensorstorm_invalid_total, sensorstorm_errors_total,
//	sensorstorm_panics_total, sensorstorm_buffered_particles,
//	sensorstorm_watermark_seconds, sensorstorm_watermark_lag_seconds,
//	sensorstorm_acked_total, sensorstorm_failed_total{reason},
//	sensorstorm_retried_total, sensorstorm_dead_letters_total,
//
// and, for the whole topology, sensorstorm_pending_trees,
// sensorstorm_pending_trees_max and sensorstorm_stale_acks_total; with
// checkpoints, sensorstorm_checkpoint_last_id,
// sensorstorm_checkpoint_age_seconds, sensorstorm_checkpoint_duration_seconds,
// sensorstorm_checkpoint_bytes and sensorstorm_checkpoints_total{outcome}.
//
// [Backlogs] is a second collector, of the sources whose input waits in a
// spool for the pipeline (an MQTT source in spool mode), labelled by
// component:
//
//	sensorstorm_backlog_messages, sensorstorm_backlog_bytes,
//	sensorstorm_backlog_age_seconds, sensorstorm_backlog_on_disk_messages,
//	sensorstorm_backlog_read_back_total, sensorstorm_backlog_at_quota,
//	sensorstorm_backlog_drain_rate, sensorstorm_backlog_catch_up_seconds.
//
// A backlog that grows means the pipeline is behind its input; at_quota 1
// means the source stopped acknowledging, and the upstream now holds or
// drops what it sends.
//
// The watermark lag is the wall clock minus the watermark: in a live run
// it is how far behind real time the results are; in a replay it mostly
// measures the recording's age, and the watermark itself is the figure to
// watch.
package metrics
