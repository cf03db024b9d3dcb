// Package jetstreamstore keeps checkpoints in NATS JetStream, for a
// pipeline whose units run on several workers: a unit that moves to
// another worker reads there what its previous worker stored.
//
// A [Store] keeps the snapshots in an object store bucket, one object per
// checkpoint and instance, which the server cuts into chunks and whose
// SHA-256 digest the client checks when it reads one back; and the
// manifests in a key-value bucket, one key per checkpoint, created only
// once every snapshot it lists is stored: a checkpoint whose manifest
// exists is complete. Each Store that New opens writes its snapshots
// under a name of its own, which its manifests record: a process that
// lost a unit and still writes to its partition (a write held while it
// was cut off) neither replaces the manifest of a checkpoint another
// process completed (its Commit fails with checkpoint.ErrCommitted) nor
// the snapshots that manifest lists. Both buckets are replicated as configured, so a
// checkpoint outlives the server that took it; while the servers elect
// a new leader for a bucket whose leader stopped (seconds), requests time
// out, and the caller makes them again.
//
// # What it is not
//
// Not incremental, unlike checkpoint.Dir: every snapshot is stored whole.
// Not a fence: two processes that both believe they own a unit both
// write, and each completes the ids the other did not; the lease that
// decides who owns it is the caller's (package cluster).
package jetstreamstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/checkpoint"
)

// Config configures a Store.
type Config struct {
	// Bucket names the object store bucket of the snapshots; the
	// manifests' key-value bucket is Bucket with "-manifests" appended.
	// Letters, digits, '-' and '_' only. Required.
	Bucket string
	// Replicas is how many servers keep each bucket. Defaults to 1.
	Replicas int
	// Storage is where the servers keep them. Defaults to
	// jetstream.FileStorage.
	Storage jetstream.StorageType
}

// Store is a checkpoint.Store in JetStream. It is safe for concurrent use.
type Store struct {
	objects   jetstream.ObjectStore
	manifests jetstream.KeyValue
	bucket    string
	// writer names this Store's snapshots apart from another process's
	// of the same checkpoint: writerLen random hex digits.
	writer string
	// objectPrefix and keyPrefix put a partition's objects and manifest
	// keys apart from the others: empty for the buckets' own checkpoints.
	objectPrefix, keyPrefix string
}

var _ checkpoint.Partitioned = (*Store)(nil)

// Partition returns the store of the checkpoints named name, kept in the
// same buckets apart from s's own and from every other partition's: a
// unit of a pipeline checkpoints into its own partition. A partition of a
// partition is a partition of s's buckets.
func (s *Store) Partition(name string) (checkpoint.Store, error) {
	if name == "" {
		return nil, fmt.Errorf("jetstreamstore: partition: %w", checkpoint.ErrInvalidName)
	}
	key := keySafe(name)
	return &Store{objects: s.objects, manifests: s.manifests, bucket: s.bucket, writer: s.writer,
		objectPrefix: "units/" + key + "/", keyPrefix: "units." + key + "."}, nil
}

// keySafe makes name a key-value key token: letters, digits, '-', '_'
// and '/' stay, every other byte is =XX.
func keySafe(name string) string {
	var b strings.Builder
	for i := range len(name) {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '/':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String()
}

var _ checkpoint.Store = (*Store)(nil)

// New opens the buckets cfg names, creating those that do not exist. An
// existing bucket is taken as it is: a pipeline's workers open the same
// ones.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("jetstreamstore: no bucket")
	}
	replicas := max(cfg.Replicas, 1)
	objects, err := js.ObjectStore(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		objects, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: cfg.Bucket, Description: "sensorstorm checkpoints: snapshots", Replicas: replicas, Storage: cfg.Storage,
		})
		if err != nil {
			// Another process created it meanwhile, and may have turned
			// its direct gets off already (see leaderReads).
			objects, err = js.ObjectStore(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstreamstore: bucket %s: %w", cfg.Bucket, err)
	}
	kvName := cfg.Bucket + "-manifests"
	manifests, err := js.KeyValue(ctx, kvName)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		manifests, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: kvName, Description: "sensorstorm checkpoints: manifests", Replicas: replicas, Storage: cfg.Storage,
		})
		if err != nil {
			manifests, err = js.KeyValue(ctx, kvName)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstreamstore: bucket %s: %w", kvName, err)
	}
	// Reads through the streams' leaders: a direct get may be answered by
	// a replica that has not stored a checkpoint just committed, and a
	// unit restoring an older one than the newest would take again what
	// the newest covered.
	for _, stream := range []string{"OBJ_" + cfg.Bucket, "KV_" + kvName} {
		if err := leaderReads(ctx, js, stream); err != nil {
			return nil, fmt.Errorf("jetstreamstore: bucket %s: %w", cfg.Bucket, err)
		}
	}
	if objects, err = js.ObjectStore(ctx, cfg.Bucket); err != nil {
		return nil, fmt.Errorf("jetstreamstore: bucket %s: %w", cfg.Bucket, err)
	}
	if manifests, err = js.KeyValue(ctx, kvName); err != nil {
		return nil, fmt.Errorf("jetstreamstore: bucket %s: %w", kvName, err)
	}
	return &Store{objects: objects, manifests: manifests, bucket: cfg.Bucket, writer: rand.Text()[:writerLen]}, nil
}

// leaderReads turns direct gets off on stream, so that its reads are
// answered by its leader, which has every message it acknowledged.
func leaderReads(ctx context.Context, js jetstream.JetStream, stream string) error {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	cfg := st.CachedInfo().Config
	if !cfg.AllowDirect {
		return nil
	}
	cfg.AllowDirect = false
	_, err = js.UpdateStream(ctx, cfg)
	return err
}

// idKey is a checkpoint id as a key that sorts as the id does.
func idKey(id uint64) string { return fmt.Sprintf("%020d", id) }

// manifestKey is the key of the manifest of checkpoint id.
func (s *Store) manifestKey(id uint64) string { return s.keyPrefix + idKey(id) }

// writerLen is the length of a Store's writer name.
const writerLen = 16

// objectName is the name of writer's snapshot of instance in checkpoint
// id.
func (s *Store) objectName(id uint64, writer, instance string) string {
	return s.objectPrefix + idKey(id) + "/" + writer + "/" + instance
}

// objectID returns the checkpoint id of a snapshot's object name, false
// for an object of another partition.
func (s *Store) objectID(name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, s.objectPrefix)
	if !ok {
		return 0, false
	}
	key, _, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(key, 10, 64)
	return id, err == nil
}

// Put implements checkpoint.Store.
func (s *Store) Put(ctx context.Context, id uint64, instance string, snapshot []byte) error {
	if instance == "" {
		return fmt.Errorf("jetstreamstore: put %d: %w", id, checkpoint.ErrInvalidName)
	}
	if _, err := s.objects.PutBytes(ctx, s.objectName(id, s.writer, instance), snapshot); err != nil {
		return fmt.Errorf("jetstreamstore: put %d %q: %w", id, instance, err)
	}
	return nil
}

// Commit implements checkpoint.Store.
func (s *Store) Commit(ctx context.Context, m checkpoint.Manifest) error {
	for _, in := range m.Instances {
		if _, err := s.objects.GetInfo(ctx, s.objectName(m.ID, s.writer, in)); err != nil {
			return fmt.Errorf("jetstreamstore: commit %d: snapshot of %q: %w", m.ID, in, notExist(err))
		}
	}
	data, err := m.MarshalBinary()
	if err == nil {
		// Created, not put: a holder that lost its unit and writes late
		// does not replace the checkpoint its successor completed.
		_, err = s.manifests.Create(ctx, s.manifestKey(m.ID), append([]byte(s.writer), data...))
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		err = checkpoint.ErrCommitted
	}
	if err != nil {
		return fmt.Errorf("jetstreamstore: commit %d: %w", m.ID, err)
	}
	return nil
}

// Checkpoints implements checkpoint.Store.
func (s *Store) Checkpoints(ctx context.Context) ([]uint64, error) {
	keys, err := s.manifests.ListKeysFiltered(ctx, s.keyPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("jetstreamstore: list %s-manifests: %w", s.bucket, err)
	}
	defer keys.Stop()
	var ids []uint64
	for key := range keys.Keys() {
		if id, err := strconv.ParseUint(strings.TrimPrefix(key, s.keyPrefix), 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// A listing may report a key twice while it is written.
	slices.Sort(ids)
	ids = slices.Compact(ids)
	slices.Reverse(ids)
	return ids, nil
}

// Manifest implements checkpoint.Store.
func (s *Store) Manifest(ctx context.Context, id uint64) (checkpoint.Manifest, error) {
	m, _, err := s.manifest(ctx, id)
	return m, err
}

// manifest returns the manifest of checkpoint id and the name of the
// writer of its snapshots.
func (s *Store) manifest(ctx context.Context, id uint64) (checkpoint.Manifest, string, error) {
	e, err := s.manifests.Get(ctx, s.manifestKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return checkpoint.Manifest{}, "", fmt.Errorf("checkpoint %d: %w", id, checkpoint.ErrNotFound)
	}
	if err != nil {
		return checkpoint.Manifest{}, "", fmt.Errorf("jetstreamstore: manifest %d: %w", id, err)
	}
	file := s.bucket + "-manifests/" + s.manifestKey(id)
	value := e.Value()
	if len(value) < writerLen {
		return checkpoint.Manifest{}, "", &checkpoint.CorruptError{File: file, Err: fmt.Errorf("%w: %d bytes", checkpoint.ErrFormat, len(value))}
	}
	var m checkpoint.Manifest
	if err := m.UnmarshalBinary(value[writerLen:]); err != nil {
		var corrupt *checkpoint.CorruptError
		if errors.As(err, &corrupt) {
			corrupt.File = file
			corrupt.Offset += writerLen
		}
		return checkpoint.Manifest{}, "", err
	}
	if m.ID != id {
		return checkpoint.Manifest{}, "", &checkpoint.CorruptError{File: file,
			Err: fmt.Errorf("%w: manifest of checkpoint %d", checkpoint.ErrFormat, m.ID)}
	}
	return m, string(value[:writerLen]), nil
}

// Get implements checkpoint.Store: of a complete checkpoint, the snapshot
// its manifest lists; of another, this Store's own. A snapshot whose
// digest does not match is refused with a *checkpoint.CorruptError whose
// Err is checkpoint.ErrChecksum.
func (s *Store) Get(ctx context.Context, id uint64, instance string) ([]byte, error) {
	_, writer, err := s.manifest(ctx, id)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		writer = s.writer
	case err != nil:
		return nil, err
	}
	name := s.objectName(id, writer, instance)
	b, err := s.objects.GetBytes(ctx, name)
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return nil, &checkpoint.CorruptError{File: s.bucket + "/" + name, Err: fs.ErrNotExist}
	case errors.Is(err, jetstream.ErrDigestMismatch):
		return nil, &checkpoint.CorruptError{File: s.bucket + "/" + name, Err: checkpoint.ErrChecksum}
	}
	return nil, fmt.Errorf("jetstreamstore: get %d %q: %w", id, instance, err)
}

// Prune implements checkpoint.Store.
func (s *Store) Prune(ctx context.Context, keep int) error {
	ids, err := s.Checkpoints(ctx)
	if err != nil || len(ids) <= max(keep, 1) {
		return err
	}
	oldest := ids[max(keep, 1)-1]
	for _, id := range ids[max(keep, 1):] {
		if err := s.manifests.Purge(ctx, s.manifestKey(id)); err != nil {
			return fmt.Errorf("jetstreamstore: prune manifest %d: %w", id, err)
		}
	}
	objects, err := s.objects.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jetstreamstore: prune: list %s: %w", s.bucket, err)
	}
	for _, o := range objects {
		if id, ok := s.objectID(o.Name); ok && id < oldest {
			if err := s.objects.Delete(ctx, o.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				return fmt.Errorf("jetstreamstore: prune %s: %w", o.Name, err)
			}
		}
	}
	return nil
}

// notExist makes a missing object's error one that wraps fs.ErrNotExist.
func notExist(err error) error {
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("%w (%w)", fs.ErrNotExist, err)
	}
	return err
}

// Newest describes the newest complete checkpoint of a partition.
type Newest struct {
	ID uint64
	// At is when its manifest was written.
	At time.Time
}

// NewestOfPartitions returns, by partition name, the newest complete
// checkpoint of every partition of the buckets bucket names, without
// creating them: none when they do not exist. It reads what package
// cluster's status shows.
func NewestOfPartitions(ctx context.Context, js jetstream.JetStream, bucket string) (map[string]Newest, error) {
	kv, err := js.KeyValue(ctx, bucket+"-manifests")
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jetstreamstore: bucket %s-manifests: %w", bucket, err)
	}
	keys, err := kv.ListKeysFiltered(ctx, "units.*.*")
	if err != nil {
		return nil, fmt.Errorf("jetstreamstore: list %s-manifests: %w", bucket, err)
	}
	defer keys.Stop()
	newest := map[string]string{}
	for key := range keys.Keys() {
		rest, _ := strings.CutPrefix(key, "units.")
		part, id, ok := strings.Cut(rest, ".")
		if ok && id > newest[part] {
			newest[part] = id
		}
	}
	out := map[string]Newest{}
	for part, idKey := range newest {
		id, err := strconv.ParseUint(idKey, 10, 64)
		if err != nil {
			continue
		}
		e, err := kv.Get(ctx, "units."+part+"."+idKey)
		if err != nil {
			continue
		}
		out[unescapeKey(part)] = Newest{ID: id, At: e.Created()}
	}
	return out, ctx.Err()
}

// unescapeKey undoes keySafe.
func unescapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		if key[i] == '=' && i+2 < len(key) {
			if c, err := strconv.ParseUint(key[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(c))
				i += 2
				continue
			}
		}
		b.WriteByte(key[i])
	}
	return b.String()
}
