package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sensorstorm/sensorstorm/checkpoint/jetstreamstore"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/jetstreamedge"
)

// Status is the state of one pipeline's cluster.
type Status struct {
	// Pipeline is the pipeline's name as its stream has it
	// (jetstreamedge.Token).
	Pipeline string
	// Workers are the workers announced now.
	Workers []Announcement
	// Leases maps the source instances replayed now to their workers;
	// Done lists those replayed to their end.
	Leases map[string]string
	Done   []string
	// Checkpoints maps source instances to the number of particles from
	// their start that JetStream confirmed, from which a worker taking
	// a lease over resumes.
	Checkpoints map[string]string
	// Holdings maps the instances of live sources (MQTT) to the number
	// of times a worker took their lease.
	Holdings map[string]string
	// Units are the bolt instances, one per consumer.
	Units []Unit
}

// Unit is the state of one bolt instance's consumer.
type Unit struct {
	Consumer string
	// Pending counts the messages not yet delivered: the lag.
	// AckPending those delivered and not acknowledged; Redelivered
	// those delivered more than once.
	Pending               uint64
	AckPending, Redeliver int
	// Pinned tells whether a worker is pinned to the unit; Workers are
	// the workers that announced they received data for it.
	Pinned  bool
	Workers []string
	// Checkpoint is the id of the unit's newest complete checkpoint, 0
	// for none; CheckpointAt when it completed.
	Checkpoint   uint64
	CheckpointAt time.Time
}

// ReadStatus returns the status of every pipeline with a stream on nc's
// JetStream, sorted by name.
func ReadStatus(ctx context.Context, nc *nats.Conn) ([]Status, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	prefix := jetstreamedge.StreamName("")
	var out []Status
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		if tok, ok := strings.CutPrefix(name, prefix); ok {
			st, err := readStatus(ctx, js, name, tok)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				// Deleted, or not yet created everywhere.
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("cluster: streams: %w", err)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Pipeline, b.Pipeline) })
	return out, nil
}

// ReadPipelineStatus returns the status of the pipeline name alone, or an
// error when its buckets or stream cannot be read (not created yet, say).
// It reads only that pipeline's, where ReadStatus reads every pipeline's.
func ReadPipelineStatus(ctx context.Context, nc *nats.Conn, name string) (Status, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return Status{}, fmt.Errorf("cluster: %w", err)
	}
	return readStatus(ctx, js, jetstreamedge.StreamName(name), jetstreamedge.Token(name))
}

func readStatus(ctx context.Context, js jetstream.JetStream, stream, tok string) (Status, error) {
	st := Status{Pipeline: tok, Leases: map[string]string{}, Checkpoints: map[string]string{}, Holdings: map[string]string{}}
	units := map[string][]string{}
	err := eachEntry(ctx, js, workerBucket(tok), func(_ string, v []byte) {
		var a Announcement
		if json.Unmarshal(v, &a) == nil {
			st.Workers = append(st.Workers, a)
			for _, u := range a.Units {
				units[u] = append(units[u], a.Worker)
			}
		}
	})
	if err == nil {
		err = eachEntry(ctx, js, leaseBucket(tok), func(k string, v []byte) { st.Leases[k] = string(v) })
	}
	if err == nil {
		err = eachEntry(ctx, js, doneBucket(tok), func(k string, v []byte) {
			if src, ok := strings.CutPrefix(k, checkpointKey("")); ok {
				st.Checkpoints[src] = string(v)
			} else if src, ok := strings.CutPrefix(k, epochKey("")); ok {
				st.Holdings[src] = string(v)
			} else {
				st.Done = append(st.Done, k)
			}
		})
	}
	if err != nil {
		return st, err
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return st, fmt.Errorf("cluster: stream %s: %w", stream, err)
	}
	checkpoints, err := unitCheckpoints(ctx, js, tok)
	if err != nil {
		return st, err
	}
	consumers := s.ListConsumers(ctx)
	for info := range consumers.Info() {
		u := Unit{Consumer: info.Name, Pending: info.NumPending, AckPending: info.NumAckPending,
			Redeliver: info.NumRedelivered, Workers: units[info.Name]}
		if c, ok := checkpoints[info.Name]; ok {
			u.Checkpoint, u.CheckpointAt = c.ID, c.At
		}
		for _, g := range info.PriorityGroups {
			u.Pinned = u.Pinned || g.PinnedClientID != ""
		}
		st.Units = append(st.Units, u)
	}
	if err := consumers.Err(); err != nil {
		return st, fmt.Errorf("cluster: consumers of %s: %w", stream, err)
	}
	slices.SortFunc(st.Units, func(a, b Unit) int { return strings.Compare(a.Consumer, b.Consumer) })
	slices.SortFunc(st.Workers, func(a, b Announcement) int { return strings.Compare(a.Worker, b.Worker) })
	slices.Sort(st.Done)
	return st, nil
}

// unitCheckpoints returns the newest checkpoint of each unit of the
// pipeline whose stream token is tok, by consumer. A unit's checkpoints
// are in the partition named after its head instance as package topology
// names it in checkpoints: bolt/NAME/INDEX.
func unitCheckpoints(ctx context.Context, js jetstream.JetStream, tok string) (map[string]jetstreamstore.Newest, error) {
	newest, err := jetstreamstore.NewestOfPartitions(ctx, js, checkpointBucket(tok))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	out := map[string]jetstreamstore.Newest{}
	for part, n := range newest {
		rest, ok := strings.CutPrefix(part, "bolt/")
		i := strings.LastIndexByte(rest, '/')
		if !ok || i < 0 {
			continue
		}
		index, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			continue
		}
		out[jetstreamedge.ConsumerName(rest[:i], index)] = n
	}
	return out, nil
}

// eachEntry calls fn with every key and value of bucket; a bucket that
// does not exist has none.
func eachEntry(ctx context.Context, js jetstream.JetStream, bucket string, fn func(k string, v []byte)) error {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", bucket, err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", bucket, err)
	}
	for k := range keys.Keys() {
		if e, err := kv.Get(ctx, k); err == nil {
			fn(k, e.Value())
		}
	}
	return nil
}

// Write writes s for people: workers with the units assigned to them,
// those they hold and those they received data for, sources, then units
// with their lag and how far in event time they finished.
func (s *Status) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "pipeline %s: %d workers, %d units\n", s.Pipeline, len(s.Workers), len(s.Units))
	fmt.Fprintln(tw, "WORKER\tSINCE\tLEASES\tASSIGNED\tHELD\tRECEIVED")
	for _, a := range s.Workers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Worker, a.Since.UTC().Format("2006-01-02T15:04:05Z"), list(a.Leases), list(a.Assigned), list(a.Held), list(a.Units))
	}
	fmt.Fprintln(tw, "SOURCE\tSTATE")
	var sources []string
	for k := range s.Leases {
		sources = append(sources, k)
	}
	slices.Sort(sources)
	for _, k := range sources {
		if n, ok := s.Holdings[k]; ok {
			fmt.Fprintf(tw, "%s\tread by %s, holding %s\n", k, s.Leases[k], n)
			continue
		}
		fmt.Fprintf(tw, "%s\treplayed by %s, %s confirmed\n", k, s.Leases[k], or(s.Checkpoints[k], "0"))
	}
	for _, k := range s.Done {
		fmt.Fprintf(tw, "%s\tdone\n", k)
	}
	fmt.Fprintln(tw, "UNIT\tPINNED\tLAG\tACK PENDING\tREDELIVERED\tCHECKPOINT\tWORKERS")
	for _, u := range s.Units {
		checkpoint := "-"
		if u.Checkpoint != 0 {
			checkpoint = fmt.Sprintf("%d at %s", u.Checkpoint, u.CheckpointAt.UTC().Format("15:04:05.000"))
		}
		fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d\t%s\t%s\n", u.Consumer, u.Pinned, u.Pending, u.AckPending, u.Redeliver, checkpoint, list(u.Workers))
	}
	return tw.Flush()
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
