package pipeline

import "strings"

// Maxima of the sizes a pipeline gives. They are far above what a run
// needs, and low enough that a slip such as "parallelism: 1000000000" is
// an error of Parse, naming the key and its place, rather than a run that
// takes the machine's memory.
const (
	// MaxParallelism bounds the instances of a source or bolt.
	MaxParallelism = 1024
	// MaxAttempts bounds acking's max_attempts.
	MaxAttempts = 1000
	// MaxCount bounds every other count: pending trees, messages
	// buffered, rows or messages per batch.
	MaxCount = 1 << 24
	// MaxBytes bounds every size in bytes: 16 GiB.
	MaxBytes = 1 << 34
)

// maxOf returns the maximum of the integer at key, a key of a connector's
// mapping.
func maxOf(key string) int64 {
	switch {
	case strings.HasSuffix(key, "_bytes"), strings.HasSuffix(key, "_size") && key != "batch_size",
		key == "max_payload", key == "max_line_length":
		return MaxBytes
	}
	return MaxCount
}
