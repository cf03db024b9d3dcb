package spool_test

import (
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
