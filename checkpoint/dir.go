package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// File names in a Dir: a folder per checkpoint, its id in 20 digits so that
// names sort as ids; in it a file per instance and the manifest.
const (
	idDigits     = 20
	manifestName = "MANIFEST"
	snapPrefix   = "snap-"
	snapSuffix   = ".snap"
)

// Dir is the local [Store]: a directory holding a folder per checkpoint,
// and in it one file per instance and the manifest. An instance's file
// lists the content-defined chunks of its snapshot, kept once each under
// chunks/ and shared between checkpoints, so that a Put writes only what
// changed since the checkpoints kept (see chunks.go). Each file is written
// to a temporary name in chunks checksummed with CRC-32C, fsync'd and
// renamed into place; Commit then fsyncs the folder, writes the manifest
// the same way and fsyncs the folder and the directory, so that a complete
// checkpoint is durable and an incomplete one has no manifest. Dir is safe
// for concurrent use by the instances of one run; two runs must not share
// a directory.
type Dir struct {
	root string
	// grace spares chunks written or reused this recently from Prune.
	grace time.Duration
}

var _ Store = (*Dir)(nil)

// OpenDir returns the Dir at root, creating the directory if needed.
func OpenDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: open store: %w", err)
	}
	return &Dir{root: root, grace: pruneGrace}, nil
}

var _ Partitioned = (*Dir)(nil)

// Partition implements Partitioned: a partition is a Dir in the folder
// units/NAME under d's.
func (d *Dir) Partition(name string) (Store, error) {
	if name == "" {
		return nil, fmt.Errorf("checkpoint: partition: %w", ErrInvalidName)
	}
	p, err := OpenDir(filepath.Join(d.root, "units", escape(name)))
	if err != nil {
		return nil, err
	}
	p.grace = d.grace
	return p, nil
}

func (d *Dir) folder(id uint64) string {
	return filepath.Join(d.root, fmt.Sprintf("%0*d", idDigits, id))
}

// snapshotPath returns the file of instance's snapshot of id.
func (d *Dir) snapshotPath(id uint64, instance string) (string, error) {
	if instance == "" {
		return "", ErrInvalidName
	}
	return filepath.Join(d.folder(id), snapPrefix+escape(instance)+snapSuffix), nil
}

// escape makes an instance name a file name on every system: lower-case
// letters, digits, '-' and '_' stay, every other byte is %XX, so that
// names differing only in case stay apart on case-insensitive systems and
// the prefix keeps reserved names (con, nul) away.
func escape(name string) string {
	var b strings.Builder
	for i := range len(name) {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, id uint64, instance string, snapshot []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := d.snapshotPath(id, instance)
	if err != nil {
		return fmt.Errorf("checkpoint: put %q: %w", instance, err)
	}
	if err := os.MkdirAll(d.folder(id), 0o755); err != nil {
		return fmt.Errorf("checkpoint: put %q of %d: %w", instance, id, err)
	}
	list, err := d.putChunks(snapshot)
	if err == nil {
		err = writeFile(path, kindSnap, list)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: put %q of %d: %w", instance, id, err)
	}
	return nil
}

// Commit implements Store.
func (d *Dir) Commit(ctx context.Context, m Manifest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, in := range m.Instances {
		path, err := d.snapshotPath(m.ID, in)
		if err == nil {
			_, err = os.Stat(path)
		}
		if err != nil {
			return fmt.Errorf("checkpoint: commit %d: snapshot of %q: %w", m.ID, in, err)
		}
	}
	data, _ := m.MarshalBinary() // it cannot fail
	folder := d.folder(m.ID)
	// One process writes a Dir: no other commits between this look and
	// the rename.
	if _, err := os.Stat(filepath.Join(folder, manifestName)); err == nil {
		return fmt.Errorf("checkpoint: commit %d: %w", m.ID, ErrCommitted)
	}
	err := syncDir(folder) // the snapshots' renames, before the manifest
	if err == nil {
		err = writeFile(filepath.Join(folder, manifestName), kindManif, data)
	}
	if err == nil {
		err = syncDir(folder)
	}
	if err == nil {
		err = syncDir(d.root)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: commit %d: %w", m.ID, err)
	}
	return nil
}

// Checkpoints implements Store.
func (d *Dir) Checkpoints(ctx context.Context) ([]uint64, error) {
	ids, err := d.folders(ctx)
	if err != nil {
		return nil, err
	}
	complete := ids[:0]
	for _, id := range ids {
		_, err := os.Stat(filepath.Join(d.folder(id), manifestName))
		switch {
		case err == nil:
			complete = append(complete, id)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("checkpoint: list: %w", err)
		}
	}
	return complete, nil
}

// folders returns the ids of the checkpoint folders, complete or not,
// newest first.
func (d *Dir) folders(ctx context.Context) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d.root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list: %w", err)
	}
	var ids []uint64
	for _, e := range entries {
		if !e.IsDir() || len(e.Name()) != idDigits {
			continue
		}
		if id, err := strconv.ParseUint(e.Name(), 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids, nil
}

// Manifest implements Store.
func (d *Dir) Manifest(ctx context.Context, id uint64) (Manifest, error) {
	if err := ctx.Err(); err != nil {
		return Manifest{}, err
	}
	path := filepath.Join(d.folder(id), manifestName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, fmt.Errorf("checkpoint %d: %w", id, ErrNotFound)
	}
	b, err := readFile(path, kindManif)
	if err != nil {
		return Manifest{}, err
	}
	m, bad := decodeManifest(b, id)
	if bad != nil {
		bad.File, bad.Offset = path, fileOffset(int(bad.Offset))
		return Manifest{}, bad
	}
	return m, nil
}

// Get implements Store.
func (d *Dir) Get(ctx context.Context, id uint64, instance string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.snapshotPath(id, instance)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: get %q: %w", instance, err)
	}
	list, err := readFile(path, kindSnap)
	if err != nil {
		return nil, err
	}
	return d.getChunks(path, list)
}

// Prune implements Store. It removes a checkpoint's manifest first, so that
// a checkpoint is never seen complete with files missing.
func (d *Dir) Prune(ctx context.Context, keep int) error {
	complete, err := d.Checkpoints(ctx)
	if err != nil || len(complete) == 0 {
		return err
	}
	oldest := complete[min(max(keep, 1), len(complete))-1]
	all, err := d.folders(ctx)
	if err != nil {
		return err
	}
	for _, id := range all {
		if id >= oldest {
			continue
		}
		folder := d.folder(id)
		err := os.Remove(filepath.Join(folder, manifestName))
		if err == nil {
			err = syncDir(folder) // incomplete before any file goes
		}
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			err = os.RemoveAll(folder)
		}
		if err != nil {
			return fmt.Errorf("checkpoint: prune %d: %w", id, err)
		}
	}
	if err := syncDir(d.root); err != nil {
		return fmt.Errorf("checkpoint: prune: %w", err)
	}
	left, err := d.folders(ctx)
	if err == nil {
		err = d.pruneChunks(left)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: prune chunks: %w", err)
	}
	return nil
}
