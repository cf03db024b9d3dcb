package checkpoint

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sensorstorm/sensorstorm/state"
)

// A snapshot is stored as content-defined chunks: cut where a rolling hash
// of the last bytes hits a pattern, so that bytes inserted or changed in
// one place move the cuts near it only, and every chunk is kept once under
// its key (xxHash64 and CRC-32C of its bytes: 96 bits, ample for chunks
// of one store that no adversary writes, and ten times faster than a
// cryptographic hash). A snapshot file lists its chunks; a Put writes only the
// chunks no checkpoint holds yet, so a checkpoint costs what changed since
// the last (at the grain of a chunk), whatever the size of the state.
const (
	chunksDir   = "chunks"
	chunkSuffix = ".chunk"
	kindChunk   = 'C'
	// cdcMin, cdcMax and cdcMask bound a chunk and set its mean size:
	// 1 MiB at least, 4 MiB at most, about 1.25 MiB: a file each, whose
	// creation costs more than its bytes below that. Only the bytes past
	// the least are hashed.
	cdcMin  = 1 << 20
	cdcMax  = 4 << 20
	cdcMask = 1<<18 - 1
	// chunkListVersion is the version of a snapshot file's list.
	chunkListVersion = 1
	// pruneGrace spares chunks written or reused this recently: a Put in
	// progress may hold them before its snapshot file names them.
	pruneGrace = time.Minute
)

// gear is the rolling hash's table: a fixed pseudo-random word per byte
// value (splitmix64), the same in every process, so that equal bytes are
// cut alike.
var gear = func() (g [256]uint64) {
	x := uint64(0x5353434b)
	for i := range g {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		g[i] = z ^ z>>31
	}
	return g
}()

// cut returns the length of the first chunk of b.
func cut(b []byte) int {
	if len(b) <= cdcMin {
		return len(b)
	}
	// The hash shifts a byte out after 64 more: it starts 64 bytes
	// before the first place a cut may fall.
	var h uint64
	for i := cdcMin - 64; i < min(len(b), cdcMax); i++ {
		h = h<<1 + gear[b[i]]
		if i >= cdcMin && h&cdcMask == 0 {
			return i + 1
		}
	}
	return min(len(b), cdcMax)
}

// chunkRef is a chunk of a snapshot: its key and its length.
type chunkRef struct {
	key string
	n   int
}

// keyLen is the length of a chunk's key: the hex of its xxHash64 and its
// CRC-32C.
const keyLen = 2 * (8 + 4)

func chunkKey(c []byte) string {
	var sum [12]byte
	binary.BigEndian.PutUint64(sum[:8], xxhash.Sum64(c))
	binary.BigEndian.PutUint32(sum[8:], crc32.Checksum(c, castagnoli))
	return hex.EncodeToString(sum[:])
}

func (d *Dir) chunkPath(key string) string {
	return filepath.Join(d.root, chunksDir, key+chunkSuffix)
}

// putChunks stores the chunks of snapshot that are not stored yet, marks
// the others as in use, and returns the list of them all.
func (d *Dir) putChunks(snapshot []byte) ([]byte, error) {
	var (
		refs    []chunkRef
		written []string
	)
	dir := filepath.Join(d.root, chunksDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	now := time.Now()
	for rest := snapshot; len(rest) > 0; {
		c := rest[:cut(rest)]
		rest = rest[len(c):]
		key := chunkKey(c)
		refs = append(refs, chunkRef{key: key, n: len(c)})
		path := d.chunkPath(key)
		if err := os.Chtimes(path, now, now); err == nil {
			continue // held already: spared by a Prune meanwhile
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err := writeFileSync(path, kindChunk, c, false); err != nil {
			return nil, err
		}
		written = append(written, path)
	}
	if len(written) > 0 {
		// The chunks' bytes and the renames that name them are durable
		// before the snapshot file that lists them is written.
		if err := syncFiles(dir, written); err != nil {
			return nil, err
		}
		if err := syncDir(dir); err != nil {
			return nil, err
		}
	}
	w := state.NewWriter(nil)
	w.PutUvarint(chunkListVersion)
	w.PutLen(len(refs))
	for _, r := range refs {
		w.PutString(r.key)
		w.PutUvarint(uint64(r.n))
	}
	return w.Bytes(), nil
}

// readChunkList reads a snapshot file's list of chunks.
func readChunkList(path string, list []byte) ([]chunkRef, error) {
	r := state.NewReader(list)
	if v := r.ReadUvarint(); v != chunkListVersion && r.Err() == nil {
		return nil, &CorruptError{File: path, Err: fmt.Errorf("%w: chunk list version %d", ErrFormat, v)}
	}
	refs := make([]chunkRef, r.ReadLen())
	for i := range refs {
		refs[i] = chunkRef{key: r.ReadString(), n: int(r.ReadUvarint())}
		if len(refs[i].key) != keyLen && r.Err() == nil {
			return nil, &CorruptError{File: path, Err: fmt.Errorf("%w: chunk key %q", ErrFormat, refs[i].key)}
		}
	}
	if err := r.Err(); err != nil {
		return nil, &CorruptError{File: path, Offset: int64(r.Offset()), Err: err}
	}
	return refs, nil
}

// getChunks reads the snapshot whose list is in path, checking every
// chunk against its key.
func (d *Dir) getChunks(path string, list []byte) ([]byte, error) {
	refs, err := readChunkList(path, list)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, r := range refs {
		total += r.n
	}
	snapshot := make([]byte, 0, total)
	for _, r := range refs {
		cpath := d.chunkPath(r.key)
		// readFile checks every frame's CRC-32C: the bytes are those
		// written; the length tells a chunk of another snapshot.
		c, err := readFile(cpath, kindChunk)
		if err != nil {
			return nil, err
		}
		if len(c) != r.n {
			return nil, &CorruptError{File: cpath, Err: fmt.Errorf("%w: chunk of %d bytes, the list says %d", ErrFormat, len(c), r.n)}
		}
		snapshot = append(snapshot, c...)
	}
	return snapshot, nil
}

// pruneChunks removes the chunks that no checkpoint left in the store
// lists, but for those written or reused in the last pruneGrace.
func (d *Dir) pruneChunks(ids []uint64) error {
	held := map[string]bool{}
	for _, id := range ids {
		snaps, err := filepath.Glob(filepath.Join(d.folder(id), snapPrefix+"*"+snapSuffix))
		if err != nil {
			return err
		}
		for _, path := range snaps {
			list, err := readFile(path, kindSnap)
			if err != nil {
				continue // a damaged checkpoint holds nothing
			}
			refs, err := readChunkList(path, list)
			if err != nil {
				continue
			}
			for _, r := range refs {
				held[r.key] = true
			}
		}
	}
	root := filepath.Join(d.root, chunksDir)
	old := time.Now().Add(-d.grace)
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || e.IsDir() || filepath.Ext(path) != chunkSuffix {
			return err
		}
		key := filepath.Base(path[:len(path)-len(chunkSuffix)])
		if held[key] {
			return nil
		}
		info, err := e.Info()
		if err != nil || (d.grace > 0 && info.ModTime().After(old)) {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}
