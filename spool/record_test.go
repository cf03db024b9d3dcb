package spool_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/spool"
)

func TestRecordRoundTrip(t *testing.T) {
	r := spool.Record{Source: "a/b", Received: 123, Payload: []byte("m v=1")}
	got, ok := spool.ParseRecord(spool.AppendRecord(nil, r))
	require.True(t, ok)
	assert.Equal(t, r, got)
	_, ok = spool.ParseRecord([]byte{5, 'a'})
	assert.False(t, ok)
}

// TestPendingRecords checks that PendingRecords hands out the Records a
// crashed writer left, and stops at one that is not a Record.
func TestPendingRecords(t *testing.T) {
	dir := t.TempDir()
	s, err := spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	want := []spool.Record{{Source: "a", Received: 1, Payload: []byte("m v=1")}, {Source: "b", Received: 2, Payload: []byte{}}}
	for _, r := range want {
		_, err := s.Append(spool.AppendRecord(nil, r))
		require.NoError(t, err)
	}
	_, err = s.Append([]byte{9})
	require.NoError(t, err)
	require.NoError(t, s.Sync())
	s.Crash()
	s, err = spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	defer s.Close()
	var got []spool.Record
	err = s.PendingRecords(func(_ uint64, r spool.Record) error {
		r.Payload = bytes.Clone(r.Payload)
		got = append(got, r)
		return nil
	})
	assert.ErrorIs(t, err, spool.ErrBadRecord)
	assert.Equal(t, want, got)
}
