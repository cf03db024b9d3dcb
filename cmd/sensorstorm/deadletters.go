package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/topology"
)

// deadLetterUsage is the usage of --dead-letter.
const deadLetterUsage = "append dead letters (bad input, dropped late particles, given-up trees) to `FILE` as JSON lines:\n" +
	"component, instance, reason, source, line, column, error, and payload (the raw bytes as a string,\n" +
	"or payload_base64 when they are not UTF-8)"

// deadLetters is the command's dead-letter sink: it logs each dead letter
// (the logger limits repeats) and, with --dead-letter, appends it to a
// file.
type deadLetters struct {
	logger *slog.Logger
	file   *file.DeadLetterWriter
	close  func() error
}

var _ topology.DeadLetterSink = (*deadLetters)(nil)

// registerDeadLetter defines --dead-letter.
func registerDeadLetter(fs *flag.FlagSet, path *string) {
	fs.StringVar(path, "dead-letter", "", deadLetterUsage)
}

// openDeadLetters returns the sink, appending to path unless it is empty.
// A file that cannot be written (a full disk) is retried like any failing
// destination; stop is called with the error when it is given up on.
func openDeadLetters(path string, logger *slog.Logger, stop func(error)) (*deadLetters, error) {
	d := &deadLetters{logger: logger, close: func() error { return nil }}
	if path == "" {
		return d, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	d.file, d.close = file.NewDeadLetterWriter(f, file.DeadLetterConfig{OnGiveUp: stop, Logger: logger}), f.Close
	return d, nil
}

// DeadLetter implements topology.DeadLetterSink.
func (d *deadLetters) DeadLetter(ctx context.Context, l topology.DeadLetter) {
	d.logger.WarnContext(ctx, "dead letter", "component", l.Component, "reason", l.Reason, "err", l.Err)
	if d.file != nil {
		d.file.DeadLetter(ctx, l)
	}
}

// Close closes the file and reports the first error writing to it.
func (d *deadLetters) Close() error {
	var err error
	if d.file != nil {
		err = d.file.Err()
	}
	return errors.Join(err, d.close())
}

var _ io.Closer = (*deadLetters)(nil)
