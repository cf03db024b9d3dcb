package spool

import (
	"hash/crc32"
	"testing"

	"pgregory.net/rapid"
)

// updateShort agrees with crc32.Update, from any checksum so far.
func TestUpdateShort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		crc := rapid.Uint32().Draw(t, "crc")
		p := rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "p")
		if got, want := updateShort(crc, p), crc32.Update(crc, castagnoli, p); got != want {
			t.Fatalf("updateShort(%#x, %x) = %#x, want %#x", crc, p, got, want)
		}
	})
}
