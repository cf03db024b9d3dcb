package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServesLatestAggregates(t *testing.T) {
	latest := NewLatest()
	topo, err := build("../../testdata/library1-r1.lp", latest)
	require.NoError(t, err)
	require.NoError(t, topo.Run(context.Background()))

	srv := httptest.NewServer(latest)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/latest")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var got []Aggregate
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Len(t, got, 19, "one aggregate per mote")
	for _, a := range got {
		assert.Contains(t, a.Fields, "temperature_mean")
		assert.InDelta(t, 21.5, a.Fields["temperature_mean"], 2.5)
		// The last window of the recording, which ends at 23:59.
		assert.Equal(t, 0, a.Time.Hour())
	}
}
