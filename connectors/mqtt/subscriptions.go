package mqtt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// subscriptionsFile, in StateDir, records the topic filters the persistent
// session of a client id was last subscribed to, so that a run with other
// filters unsubscribes from those no longer configured: the broker keeps
// a persistent session's subscriptions, and MQTT 3.1.1 cannot list them.
const subscriptionsFile = "subscriptions.json"

// subscriptions is the content of subscriptionsFile.
type subscriptions struct {
	ClientID string   `json:"client_id"`
	Topics   []string `json:"topics"`
	// QoS is the QoS every filter was granted a subscription at, nil
	// when one was refused (or by an earlier version, which did not
	// record it).
	QoS *byte `json:"qos,omitempty"`
}

// holds reports whether the recorded subscriptions are topics, each
// subscribed at qos.
func (s subscriptions) holds(topics []string, qos byte) bool {
	return s.QoS != nil && *s.QoS == qos && len(stale(s.Topics, topics)) == 0 && len(stale(topics, s.Topics)) == 0
}

// readSubscriptions returns the subscriptions recorded in dir for
// clientID: none when dir is empty, the file is missing, or it belongs to
// another client id, whose session is another.
func readSubscriptions(dir, clientID string) (subscriptions, error) {
	if dir == "" {
		return subscriptions{}, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, subscriptionsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return subscriptions{}, nil
	}
	if err != nil {
		return subscriptions{}, err
	}
	var s subscriptions
	if err := json.Unmarshal(b, &s); err != nil {
		return subscriptions{}, fmt.Errorf("%s: %w", subscriptionsFile, err)
	}
	if s.ClientID != clientID {
		return subscriptions{}, nil
	}
	return s, nil
}

// writeSubscriptions records s, replacing the file in dir atomically.
func writeSubscriptions(dir string, s subscriptions) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, subscriptionsFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// stale returns the filters of old not in current.
func stale(old, current []string) []string {
	var out []string
	for _, t := range old {
		if !slices.Contains(current, t) {
			out = append(out, t)
		}
	}
	return out
}
