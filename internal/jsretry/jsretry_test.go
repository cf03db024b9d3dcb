package jsretry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/internal/jsretry"
)

func TestTransient(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{errors.New("nats: timeout"), true},
		{context.DeadlineExceeded, true},
		{&jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 408, Description: "request timeout"}, true},
		{fmt.Errorf("wrapped: %w", &jetstream.APIError{Code: 500}), true},
		{&jetstream.APIError{Code: 400, Description: "stream name already in use"}, false},
		{fmt.Errorf("wrapped: %w", &jetstream.APIError{Code: 404}), false},
		{context.Canceled, false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, jsretry.Transient(c.err), "%v", c.err)
	}
}

// Do tries again after a transient error, and stops at a success, at an
// error that is not transient, and when its context ends.
func TestDo(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	unavailable := &jetstream.APIError{Code: 503}
	refused := &jetstream.APIError{Code: 400}
	cases := []struct {
		name     string
		errs     []error // what the attempts return, in turn; nil after
		canceled bool
		want     error
		attempts int
	}{
		{"succeeds after two failures", []error{unavailable, unavailable}, false, nil, 3},
		{"refused", []error{unavailable, refused}, false, refused, 2},
		{"context ended", []error{unavailable, unavailable}, true, unavailable, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.canceled {
				cancel()
			}
			attempts := 0
			err := jsretry.Do(ctx, quiet, "test", func() error {
				attempts++
				if attempts <= len(c.errs) {
					return c.errs[attempts-1]
				}
				return nil
			})
			require.Equal(t, c.want, err)
			require.Equal(t, c.attempts, attempts)
		})
	}
}
