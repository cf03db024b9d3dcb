package mqtt_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/internal/cputime"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// BenchmarkBacklogDrain drains a backlog on disk of 1M readings, left in
// the spool by an earlier run, through a spool-mode Source into a one-bolt
// topology (1s window, acking on) writing a file sink, against replaying
// the same readings from a line-protocol file through the same topology
// in the same run, untracked as sensorstorm replay does, and tracked:
// readings come one per message, or ten per message like batched MQTT
// publishers. Besides the rates it reports the process's CPU time per
// particle of the drain and of the untracked replay, and their ratio: on
// a machine shared with other work the rates move with the load, the CPU
// a particle costs much less.
func BenchmarkBacklogDrain(b *testing.B) {
	broker := mosquittotest.Start(b, mosquittotest.Config{})
	for _, per := range []int{1, 10} {
		b.Run(fmt.Sprintf("per-message=%d", per), func(b *testing.B) {
			readings := benchReadings()
			var fromSpool, fromFile, fromTracked, open time.Duration
			var cpuSpool, cpuFile time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				dir := b.TempDir()
				lp := filepath.Join(dir, "in.lp")
				state := filepath.Join(dir, "state")
				fillBacklog(b, state, lp, readings, per)
				b.StartTimer()
				c := processCPU(b)
				fromFile += replayFile(b, &file.Source{Paths: []string{lp}}, filepath.Join(dir, "file.out"), readings)
				cpuFile += processCPU(b) - c
				fromTracked += replayFile(b, &file.Source{Paths: []string{lp}, Track: true}, filepath.Join(dir, "tracked.out"), readings)
				d, cpu := drainBacklog(b, broker.URL(), fmt.Sprint("drain-", per, "-", i), state, filepath.Join(dir, "spool.out"), readings/per, per, &open)
				fromSpool += d
				cpuSpool += cpu
			}
			spoolRate := float64(readings*b.N) / fromSpool.Seconds()
			fileRate := float64(readings*b.N) / fromFile.Seconds()
			b.ReportMetric(spoolRate, "particles/s")
			b.ReportMetric(fileRate, "file-particles/s")
			b.ReportMetric(spoolRate/fileRate, "ratio")
			b.ReportMetric(open.Seconds()/float64(b.N), "open-s")
			// Replayed with every particle tracked by the acker, as the
			// MQTT source's are.
			b.ReportMetric(float64(readings*b.N)/fromTracked.Seconds(), "tracked-file-particles/s")
			b.ReportMetric(float64(cpuSpool.Nanoseconds())/float64(readings*b.N), "cpu-ns/particle")
			b.ReportMetric(float64(cpuFile.Nanoseconds())/float64(readings*b.N), "file-cpu-ns/particle")
			b.ReportMetric(float64(cpuFile)/float64(cpuSpool), "cpu-ratio")
		})
	}
}

// fillBacklog writes n readings, per to a message, into the spool in
// state as the MQTT source records them, not completed, and into the
// line-protocol file lp. Readings are stamped a millisecond apart, a day
// in the past.
func fillBacklog(b *testing.B, state, lp string, n, per int) {
	sp, err := spool.Open(state, spool.Config{})
	require.NoError(b, err)
	f, err := os.Create(lp)
	require.NoError(b, err)
	w := bufio.NewWriter(f)
	base := time.Now().Add(-24 * time.Hour).UnixNano()
	var payload, rec []byte
	for i := 0; i < n; i += per {
		payload = payload[:0]
		for j := i; j < i+per; j++ {
			if j > i {
				payload = append(payload, '\n')
			}
			payload = fmt.Appendf(payload, "reading,sensor=s%d n=%di,v=%d.5 %d", j%8, j, j, base+int64(j)*int64(time.Millisecond))
		}
		rec = spool.AppendRecord(rec[:0], spool.Record{Source: topic(i), Received: base, Payload: payload})
		seq, err := sp.Append(rec)
		require.NoError(b, err)
		if seq%1000 == 0 {
			require.NoError(b, sp.Sync())
		}
		_, err = w.Write(payload)
		require.NoError(b, err)
		require.NoError(b, w.WriteByte('\n'))
	}
	require.NoError(b, sp.Sync())
	require.NoError(b, sp.Close())
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
}

// drainTopology returns a topology of src and one bolt writing to a file
// sink at path, as ingest builds it.
func drainTopology(b *testing.B, src topology.Source, path string) (*topology.Topology, *os.File) {
	out, err := os.Create(path)
	require.NoError(b, err)
	b.Cleanup(func() { out.Close() })
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true, MaxPending: 1 << 18}})
	require.NoError(b, err)
	topo.AddSource("in", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(file.NewSink(out, particle.Nanosecond)),
		topology.BoltConfig{Buffer: syncbuffer.Config{Window: time.Second, Late: syncbuffer.LatePass}}).
		Input("in", topology.Global())
	return topo, out
}

// replayFile replays src through the topology and returns how long it
// took.
func replayFile(b *testing.B, src *file.Source, out string, n int) time.Duration {
	topo, _ := drainTopology(b, src, out)
	start := time.Now()
	require.NoError(b, topo.Run(context.Background()))
	elapsed := time.Since(start)
	require.Equal(b, uint64(n), topo.Stats("out").Processed.Load(), "readings replayed")
	return elapsed
}

// drainBacklog runs a spool-mode Source on state until the messages
// there are completed and returns how long it took, every reading but
// the last window's written, and the CPU time the process used meanwhile.
func drainBacklog(b *testing.B, url, id, state, out string, messages, per int, open *time.Duration) (time.Duration, time.Duration) {
	src, err := mqtt.NewSource(mqtt.Config{
		ConnConfig: mqtt.ConnConfig{Brokers: []string{url}, ClientID: id},
		Topics:     []string{"sensors/#"},
		StateDir:   state,
	})
	require.NoError(b, err)
	topo, _ := drainTopology(b, src, out)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	opened := time.Now()
	go func() { errc <- topo.Run(ctx) }()
	st := src.Stats()
	// Opening the spool reads it through once: timed apart.
	for st.Emitted.Load() == 0 {
		time.Sleep(100 * time.Microsecond)
	}
	start, cpu := time.Now(), processCPU(b)
	*open += start.Sub(opened)
	// The last second of readings (1000) waits in the window for newer
	// ones: the backlog is drained when the messages before it completed.
	for st.Completed.Load() < uint64(messages-1000/per-1) {
		time.Sleep(100 * time.Microsecond)
	}
	elapsed, cpu := time.Since(start), processCPU(b)-cpu
	cancel()
	require.NoError(b, <-errc)
	require.NoError(b, src.Close())
	require.Equal(b, uint64(messages), st.Replayed.Load(), "messages read back from the spool")
	return elapsed, cpu
}

// processCPU returns the CPU time the process used so far.
func processCPU(b *testing.B) time.Duration {
	d, err := cputime.Process()
	require.NoError(b, err)
	return d
}

// benchReadings is the size of BenchmarkBacklogDrain's backlog:
// $BACKLOG_READINGS, or 1M.
func benchReadings() int {
	if n, err := strconv.Atoi(os.Getenv("BACKLOG_READINGS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// BenchmarkIngestBacklog is BenchmarkIngest with a backlog: the pipeline
// is stalled (its bolt waits on a gate) for the whole run, so that every
// message waits in the spool, past MaxBuffered on disk. Ingest is the
// rate of acknowledgements, each sent once the message is durable,
// against a bare paho subscriber on the same broker in the same run.
func BenchmarkIngestBacklog(b *testing.B) {
	broker := mosquittotest.Start(b, mosquittotest.Config{})
	defer func() {
		if b.Failed() {
			b.Log(broker.Log())
		}
	}()
	const ahead = 500
	var bare, ingest time.Duration
	var total int
	var onDisk, spoolBytes int64
	var spooled uint64
	for i := 0; b.Loop(); i++ {
		// The stalled pipeline holds up to some 20,000 messages in memory.
		n := 50_000
		total += n
		bare += benchBare(b, broker.URL(), fmt.Sprint("bench/bare/", i), n, ahead)
		d, disk, sp := benchStalled(b, broker.URL(), fmt.Sprint("bench/backlog/", i), n, ahead)
		ingest += d
		onDisk += disk
		spooled, spoolBytes = spooled+sp.Appended, spoolBytes+sp.Bytes
	}
	bareRate, ingestRate := float64(total)/bare.Seconds(), float64(total)/ingest.Seconds()
	b.ReportMetric(bareRate, "bare-msgs/s")
	b.ReportMetric(ingestRate, "ingest-msgs/s")
	b.ReportMetric(ingestRate/bareRate, "ratio")
	b.ReportMetric(float64(onDisk)/float64(b.N), "on-disk-msgs")
	b.ReportMetric(float64(spoolBytes)/float64(spooled), "disk-B/msg")
}

// benchStalled feeds n messages to a spool-mode Source whose pipeline
// does not move and returns how long until all were acknowledged, how
// many of them waited on disk then, and the spool's figures.
func benchStalled(b *testing.B, url, topic string, n, ahead int) (time.Duration, int64, spool.Stats) {
	src, stop := startStalled(b, url, topic)
	st := src.Stats()
	start := benchPublish(b, url, topic, n, ahead, func() int { return int(st.Acked.Load()) })
	for st.Acked.Load() < uint64(n) {
		time.Sleep(100 * time.Microsecond)
	}
	elapsed := time.Since(start)
	bl, ok := src.BacklogStats()
	require.True(b, ok)
	require.Positive(b, bl.OnDisk, "a backlog on disk")
	sp, _ := src.SpoolStats()
	stop()
	return elapsed, bl.OnDisk, sp
}

// startStalled runs a spool-mode Source subscribed to topic into a bolt
// that waits until stop is called, which then stops it all.
func startStalled(b *testing.B, url, topic string) (src *mqtt.Source, stop func()) {
	src, err := mqtt.NewSource(mqtt.Config{
		ConnConfig: mqtt.ConnConfig{Brokers: []string{url}, ClientID: topic + "-sub"},
		Topics:     []string{topic},
		StateDir:   b.TempDir(),
	})
	require.NoError(b, err)
	gate := make(chan struct{})
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true, MaxPending: 1 << 17}})
	require.NoError(b, err)
	topo.AddSource("mqtt", topology.Single(src), topology.SourceConfig{})
	topo.AddBolt("out", func() operation.Operation {
		return operation.Func(func(context.Context, particle.Particle, operation.Emitter) error {
			<-gate
			return nil
		})
	}, topology.BoltConfig{Buffer: syncbuffer.Config{Window: time.Second}}).Input("mqtt", topology.Global())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- topo.Run(ctx) }()
	for src.Stats().Connects.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	return src, func() {
		close(gate)
		cancel()
		require.NoError(b, <-errc)
		require.NoError(b, src.Close())
	}
}

// BenchmarkBacklogMemory fills a backlog of 1 GB ($BACKLOG_BYTES) through
// a spool-mode Source whose pipeline does not move, from a stock
// Mosquitto, in messages of 128 readings (8 KB), and reports the
// process's resident memory when an eighth of it and all of it wait, and
// the spool's bytes per message: memory stays flat, the backlog is on
// disk.
func BenchmarkBacklogMemory(b *testing.B) {
	target := int64(1 << 30)
	if v, err := strconv.ParseInt(os.Getenv("BACKLOG_BYTES"), 10, 64); err == nil && v > 0 {
		target = v
	}
	broker := mosquittotest.Start(b, mosquittotest.Config{})
	for i := 0; b.Loop(); i++ {
		topic := fmt.Sprint("bench/memory/", i)
		src, stop := startStalled(b, broker.URL(), topic)
		st := src.Stats()
		pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID(topic + "-pub"))
		require.True(b, pub.Connect().WaitTimeout(10*time.Second))
		var payload []byte
		var last paho.Token
		var early, peak int64
		var bl spool.BacklogStats
		for n := 0; bl.Bytes < target; n++ {
			for n-int(st.Acked.Load()) > 900 {
				time.Sleep(100 * time.Microsecond)
			}
			payload = payload[:0]
			for j := range 128 {
				if j > 0 {
					payload = append(payload, '\n')
				}
				payload = fmt.Appendf(payload, "reading,sensor=s%d n=%di,v=%d.5 %d", j%8, n*128+j, j, time.Now().UnixNano())
			}
			last = pub.Publish(topic, 1, false, payload)
			if n%1000 == 0 {
				bl, _ = src.BacklogStats()
				rss := residentBytes(b)
				peak = max(peak, rss)
				if early == 0 && bl.Bytes >= target/8 {
					early = rss
				}
			}
		}
		require.True(b, last.WaitTimeout(20*time.Second))
		pub.Disconnect(100)
		rss := residentBytes(b)
		peak = max(peak, rss)
		sp, _ := src.SpoolStats()
		bl, _ = src.BacklogStats()
		stop()
		b.ReportMetric(float64(early)/(1<<20), "rss-MB@1/8")
		b.ReportMetric(float64(rss)/(1<<20), "rss-MB@full")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
		b.ReportMetric(float64(bl.Bytes)/(1<<20), "backlog-MB")
		b.ReportMetric(float64(sp.Bytes)/float64(sp.Appended), "disk-B/msg")
		b.ReportMetric(float64(bl.Bytes)/float64(bl.Records), "record-B/msg")
		if rss > early+64<<20 {
			b.Errorf("resident memory grew from %d MB to %d MB with the backlog", early>>20, rss>>20)
		}
	}
}

// residentBytes returns the process's resident set size.
func residentBytes(b *testing.B) int64 {
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
