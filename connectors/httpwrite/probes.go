package httpwrite

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// maxNames bounds the databases and buckets a Source remembers for the
// probes' answers.
const maxNames = 1000

// names are the databases (1.x) and buckets (2.x) named by the writes
// taken and by CREATE DATABASE, which SHOW DATABASES and GET
// /api/v2/buckets list: the truth of a server that takes a write to any
// name and stores nothing.
type names struct {
	mu      sync.Mutex
	dbs     map[string]struct{}
	buckets map[string]struct{}
}

// add remembers name among the databases or the buckets, up to maxNames
// of each.
func (n *names) add(a api, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	set := &n.buckets
	if a == apiV1 {
		set = &n.dbs
	}
	if *set == nil {
		*set = map[string]struct{}{}
	}
	if len(*set) < maxNames {
		(*set)[name] = struct{}{}
	}
}

// list returns the databases or the buckets, sorted.
func (n *names) list(a api) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	set := n.buckets
	if a == apiV1 {
		set = n.dbs
	}
	l := make([]string, 0, len(set))
	for k := range set {
		l = append(l, k)
	}
	slices.Sort(l)
	return l
}

// readiness answers InfluxDB 2's GET /ready, which the official clients'
// Ready calls: 200, status "ready", since when and for how long, while
// writes are taken; 503 once stopping.
func (s *Source) readiness(w http.ResponseWriter, _ *http.Request) {
	if s.stopping.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unready", "message": "stopping"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"status":  "ready",
		"started": s.started.UTC().Format(time.RFC3339Nano),
		"up":      s.cfg.Wall.Now().Sub(s.started).Round(time.Millisecond).String(),
	})
}

// bucket is a bucket of GET /api/v2/buckets, in InfluxDB 2's shape.
type bucket struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	Type           string   `json:"type"`
	Description    string   `json:"description"`
	RetentionRules []string `json:"retentionRules"`
}

// buckets answers InfluxDB 2's GET /api/v2/buckets, which clients call
// to check a bucket before writing (FindBucketByName): with name=B, that
// bucket, as a write to any bucket is taken; without, the buckets
// written to. Nothing else of the buckets API is served.
func (s *Source) buckets(w http.ResponseWriter, r *http.Request) {
	if !s.probe(w, r, apiV2, http.MethodGet) {
		return
	}
	l := s.names.list(apiV2)
	if name := r.URL.Query().Get("name"); name != "" {
		l = []string{name}
	}
	bs := make([]bucket, 0, len(l))
	for _, name := range l {
		h := fnv.New64a()
		h.Write([]byte(name))
		bs = append(bs, bucket{
			ID: fmt.Sprintf("%016x", h.Sum64()), Name: name, Type: "user", RetentionRules: []string{},
			Description: "sensorstorm takes writes to any bucket into its pipeline; it stores and answers no queries",
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"links": map[string]string{"self": "/api/v2/buckets"}, "buckets": bs})
}

// statementResult is one result of a 1.x /query answer.
type statementResult struct {
	ID     int      `json:"statement_id"`
	Series []series `json:"series,omitempty"`
}

type series struct {
	Name    string     `json:"name"`
	Columns []string   `json:"columns"`
	Values  [][]string `json:"values,omitempty"`
}

// query answers InfluxDB 1.x's /query for the statements clients send
// before writing: SHOW DATABASES (Grafana's check), listing the
// databases written to or created, and CREATE DATABASE (Telegraf's),
// which takes note of the name, as a write to any database is taken.
// Any other statement is a 400 that says so: nothing is stored to query.
func (s *Source) query(w http.ResponseWriter, r *http.Request) {
	if !s.probe(w, r, apiV1, http.MethodGet, http.MethodPost) {
		return
	}
	q := r.FormValue("q")
	var results []statementResult
	for stmt := range strings.SplitSeq(q, ";") {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" {
			continue
		}
		res := statementResult{ID: len(results)}
		if db, ok := createDatabase(stmt); ok {
			s.names.add(apiV1, db)
		} else if strings.EqualFold(strings.Join(strings.Fields(stmt), " "), "SHOW DATABASES") {
			sr := series{Name: "databases", Columns: []string{"name"}}
			for _, db := range s.names.list(apiV1) {
				sr.Values = append(sr.Values, []string{db})
			}
			res.Series = []series{sr}
		} else {
			apiV1.respond(w, http.StatusBadRequest, fmt.Sprintf("statement %q: sensorstorm stores nothing to query; /query answers only SHOW DATABASES and CREATE DATABASE", stmt), nil)
			return
		}
		results = append(results, res)
	}
	if len(results) == 0 {
		apiV1.respond(w, http.StatusBadRequest, "missing required parameter \"q\"", nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}

// createDatabase returns the name a CREATE DATABASE statement creates,
// unquoted, and whether stmt is one; its WITH clause is ignored.
func createDatabase(stmt string) (string, bool) {
	rest, ok := cutWord(stmt, "CREATE")
	if ok {
		rest, ok = cutWord(rest, "DATABASE")
	}
	rest = strings.TrimSpace(rest)
	if !ok || rest == "" {
		return "", false
	}
	if quoted, ok := strings.CutPrefix(rest, `"`); ok {
		end := strings.IndexByte(quoted, '"')
		if end <= 0 {
			return "", false
		}
		return quoted[:end], true
	}
	name := strings.Fields(rest)[0]
	return name, isIdent(name)
}

// isIdent reports whether s is an unquoted InfluxQL identifier: a letter
// or underscore, then letters, digits and underscores.
func isIdent(s string) bool {
	for i, c := range []byte(s) {
		letter := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// cutWord cuts word, in any case, from the start of s after white space,
// and reports whether it was there, a word of its own.
func cutWord(s, word string) (string, bool) {
	s = strings.TrimLeft(s, " \t\r\n")
	if len(s) < len(word) || !strings.EqualFold(s[:len(word)], word) {
		return "", false
	}
	rest := s[len(word):]
	return rest, rest == "" || strings.IndexByte(" \t\r\n", rest[0]) >= 0
}

// probe checks a probe's method and token, answering 405 or 401 and
// reporting false when it fails.
func (s *Source) probe(w http.ResponseWriter, r *http.Request, a api, methods ...string) bool {
	if !slices.Contains(methods, r.Method) {
		w.Header().Set("Allow", strings.Join(methods, ", "))
		a.respond(w, http.StatusMethodNotAllowed, "method not allowed", nil)
		return false
	}
	if !s.authorized(r, a) {
		a.respond(w, http.StatusUnauthorized, "unauthorized access", nil)
		return false
	}
	return true
}

// notFound answers the paths not served with a 404 that names those
// that are.
func notFound(w http.ResponseWriter, r *http.Request) {
	apiV2.respond(w, http.StatusNotFound, fmt.Sprintf("path %s not found: sensorstorm serves InfluxDB's write API "+
		"(POST /api/v2/write, /write) and the probes clients make (/ping, /health, /ready, GET /api/v2/buckets, /query with SHOW or CREATE DATABASE)", r.URL.Path), nil)
}
