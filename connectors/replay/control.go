package replay

import (
	"encoding/json"
	"net/http"
)

// Handler returns an HTTP handler that controls s:
//
//	POST /speed?factor=F   set the speed: a factor such as 10 or 0.5, or max
//	POST /pause            pause
//	POST /resume           resume
//	GET  /status           the Status
//
// Every answer is the Status as JSON, after the change; a bad factor is
// answered 400 with the reason as text.
func Handler(s *Source) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /speed", func(w http.ResponseWriter, r *http.Request) {
		speed, err := ParseSpeed(r.FormValue("factor"))
		if err == nil {
			err = s.SetSpeed(speed)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeStatus(w, s)
	})
	mux.HandleFunc("POST /pause", func(w http.ResponseWriter, _ *http.Request) {
		s.Pause()
		writeStatus(w, s)
	})
	mux.HandleFunc("POST /resume", func(w http.ResponseWriter, _ *http.Request) {
		s.Resume()
		writeStatus(w, s)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, s)
	})
	return mux
}

func writeStatus(w http.ResponseWriter, s *Source) {
	w.Header().Set("Content-Type", "application/json")
	// An error here is the client's connection failing; there is no one
	// left to tell.
	_ = json.NewEncoder(w).Encode(s.Status())
}
