package postgres

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultBatchSize    = 5000
	DefaultWriteTimeout = 30 * time.Second
)

// Config configures a Sink.
type Config struct {
	// URL is the database to connect to, as a libpq connection string or
	// URL: postgres://user@host:5432/db.
	URL string `yaml:"url"`
	// Table is the table written to, optionally schema-qualified
	// ("metrics.readings"). It is created when missing.
	Table string `yaml:"table"`
	// BatchSize is the most rows written in one transaction. Defaults to
	// DefaultBatchSize.
	BatchSize int `yaml:"batch_size"`
	// WriteTimeout bounds one transaction; a transaction that exceeds it
	// is a failing destination. Defaults to DefaultWriteTimeout.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// Logger receives the sink's logs. Defaults to discarding them.
	Logger *slog.Logger `yaml:"-"`
}

func (c *Config) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports an error wrapping ErrInvalidConfig for a config that
// cannot work.
func (c *Config) Validate() error {
	switch {
	case c.URL == "":
		return fmt.Errorf("%w: url is empty", ErrInvalidConfig)
	case c.BatchSize < 0:
		return fmt.Errorf("%w: batch_size %d is negative", ErrInvalidConfig, c.BatchSize)
	case c.WriteTimeout < 0:
		return fmt.Errorf("%w: write_timeout %v is negative", ErrInvalidConfig, c.WriteTimeout)
	}
	if _, err := tableName(c.Table); err != nil {
		return err
	}
	return nil
}

// tableName splits an optionally schema-qualified table name.
func tableName(s string) ([]string, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%w: table %q has more than one dot", ErrInvalidConfig, s)
	}
	for _, p := range parts {
		if p == "" || len(p) > maxIdentifier {
			return nil, fmt.Errorf("%w: table %q: each name must have 1 to %d bytes", ErrInvalidConfig, s, maxIdentifier)
		}
	}
	return parts, nil
}
