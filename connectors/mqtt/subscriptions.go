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
}

// readSubscriptions returns the filters recorded in dir for clientID: none
// when dir is empty, the file is missing, or it belongs to another client
// id, whose session is another.
func readSubscriptions(dir, clientID string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, subscriptionsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s subscriptions
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", subscriptionsFile, err)
	}
	if s.ClientID != clientID {
		return nil, nil
	}
	return s.Topics, nil
}

// writeSubscriptions records topics as clientID's subscriptions in dir,
// replacing the file atomically.
func writeSubscriptions(dir, clientID string, topics []string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(subscriptions{ClientID: clientID, Topics: topics})
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
