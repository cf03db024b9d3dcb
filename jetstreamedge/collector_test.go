package jetstreamedge

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestCollectorExportsStats(t *testing.T) {
	var s Stats
	s.Published.Add(3)
	s.PublishFailed.Add(1)
	s.Duplicates.Add(7)
	want := `
# HELP sensorstorm_jetstream_duplicates_total Messages dropped because the checkpoint their unit restored holds them, and particles dropped as copies: received already, or released by the restored state.
# TYPE sensorstorm_jetstream_duplicates_total counter
sensorstorm_jetstream_duplicates_total 7
# HELP sensorstorm_jetstream_publish_failed_total Publishes the server did not confirm, each tried again.
# TYPE sensorstorm_jetstream_publish_failed_total counter
sensorstorm_jetstream_publish_failed_total 1
# HELP sensorstorm_jetstream_published_messages_total Messages the server confirmed.
# TYPE sensorstorm_jetstream_published_messages_total counter
sensorstorm_jetstream_published_messages_total 3
`
	require.NoError(t, testutil.CollectAndCompare(NewCollector(&s), strings.NewReader(want),
		"sensorstorm_jetstream_duplicates_total", "sensorstorm_jetstream_publish_failed_total", "sensorstorm_jetstream_published_messages_total"))
}
