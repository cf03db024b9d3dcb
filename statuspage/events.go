package statuspage

import (
	"net/http"
	"sync"
)

// hub hands each update to the clients of /events. A client that has not
// written the previous update yet gets the newest instead: updates are
// whole snapshots, so a slow client skips some and never holds memory or
// the server back. A new client starts with the newest update, taken under
// the same lock as publish: it gets each update once, never the one it
// started with again.
type hub struct {
	mu      sync.Mutex
	latest  []byte
	clients map[*client]struct{}
	done    chan struct{} // closed by close: streams end
	closed  bool
}

// client is one stream of /events.
type client struct {
	// next holds the update to write; size one, so that the newest
	// replaces one not yet written.
	next chan []byte
}

func newHub() *hub {
	return &hub{clients: map[*client]struct{}{}, done: make(chan struct{})}
}

// subscribe adds a client, or returns false once the hub is closed.
func (h *hub) subscribe() (*client, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	c := &client{next: make(chan []byte, 1)}
	if h.latest != nil {
		c.next <- h.latest
	}
	h.clients[c] = struct{}{}
	return c, true
}

// newest returns the latest update, or nil before the first.
func (h *hub) newest() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest
}

func (h *hub) unsubscribe(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, c)
}

// publish makes b the latest update and offers it to every client,
// replacing an update it has not taken. It never blocks: the senders,
// publish and subscribe, hold mu.
func (h *hub) publish(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latest = b
	for c := range h.clients {
		select {
		case <-c.next:
		default:
		}
		c.next <- b
	}
}

// close ends every stream, and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// serveEvents streams updates as server-sent events, each an event
// "snapshot" whose data is a Snapshot as JSON on one line, until the
// client goes away or Run ends. A stream starts with the latest update,
// or a comment before the first.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming not supported", http.StatusInternalServerError)
		return
	}
	c, ok := s.hub.subscribe()
	if !ok {
		http.Error(w, "the run has ended", http.StatusServiceUnavailable)
		return
	}
	defer s.hub.unsubscribe(c)
	if s.cfg.Tap != nil {
		defer s.cfg.Tap.Watch()()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if len(c.next) == 0 {
		// A comment: the client knows the stream is open. The first
		// update may come in meanwhile; it follows the comment.
		_, _ = w.Write([]byte(": waiting for the first update\n\n"))
	}
	flusher.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.done:
			// The last update, published before the hub closed, is the
			// run's final state: the client gets it before the end.
			select {
			case b := <-c.next:
				if writeEvent(w, b) {
					flusher.Flush()
				}
			default:
			}
			return
		case b := <-c.next:
			if !writeEvent(w, b) {
				return
			}
			flusher.Flush()
		}
	}
}

// writeEvent writes data as one event and tells whether it could.
func writeEvent(w http.ResponseWriter, data []byte) bool {
	buf := make([]byte, 0, len(data)+32)
	buf = append(buf, "event: snapshot\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, err := w.Write(buf)
	return err == nil
}
