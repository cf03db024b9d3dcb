// Package storebench measures the local checkpoint store against embedded
// key-value stores, for the claim of DESIGN.md's "The state store": one
// checkpoint of 1M keyed window states (about 64 bytes each, written by
// package state) written (fsync included) and restored, with
// checkpoint.Dir, go.etcd.io/bbolt and github.com/cockroachdb/pebble/v2
// (one key per state). It is a module of its own so that the main module
// does not depend on them; it has benchmarks only:
//
//	cd checkpoint/internal/storebench && go test -bench . -benchtime 1x -count 5
//
// # What it is not
//
// Not a store: nothing here is used by the engine.
package storebench
