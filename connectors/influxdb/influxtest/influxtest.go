// Package influxtest runs a private InfluxDB 1.x or VictoriaMetrics server
// for tests: on free loopback ports, with its own configuration and data
// directory, so that a test can stop it, kill it and start it again on the
// same ports while a sink writes to it, and read back what it stored.
//
// It needs the influxd binary (Debian package influxdb) or the
// victoria-metrics binary (Debian package victoria-metrics). When the
// binary is missing the test fails, saying what to install: a server test
// that skips would pass without testing anything.
//
// It is not a server for production use and never touches a server it
// did not start.
package influxtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/internal/proctest"
)

// startTimeout bounds how long a server may take to answer its health
// check.
const startTimeout = 30 * time.Second

// Kind is the kind of server.
type Kind int

// The kinds of server.
const (
	InfluxDB        Kind = iota // InfluxDB 1.x (influxd)
	VictoriaMetrics             // VictoriaMetrics (victoria-metrics)
)

// Config configures a Server. The zero Config is an InfluxDB 1.x without
// authentication.
type Config struct {
	// Kind is the server to run. Defaults to InfluxDB.
	Kind Kind
	// Username and Password, when set, turn authentication on: InfluxDB
	// gets an admin user of that name, VictoriaMetrics requires them as
	// basic authentication. Default to none.
	Username, Password string
}

// Server is a server process owned by a test.
type Server struct {
	t    testing.TB
	cfg  Config
	dir  string
	port int
	proc *proctest.Process
}

// Binary returns the path of the binary of kind, or an error telling what
// to install.
func Binary(kind Kind) (string, error) {
	name, pkg := "influxd", "influxdb"
	if kind == VictoriaMetrics {
		name, pkg = "victoria-metrics", "victoria-metrics"
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/usr/local/bin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("influxtest: the %s binary is missing: install the Debian package `%s` (apt-get install -y %s; scripts/test.sh does as root)", name, pkg, pkg)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Start starts a server configured by cfg on free loopback ports, with a
// data directory of the test's, and kills it when the test ends. It fails
// the test if the server cannot be started.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin, err := Binary(cfg.Kind)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, cfg: cfg, dir: t.TempDir(), port: proctest.FreePort(t)}
	var args []string
	switch cfg.Kind {
	case InfluxDB:
		conf := filepath.Join(s.dir, "influxdb.conf")
		text := fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"
[meta]
  dir = "%[2]s/meta"
[data]
  dir = "%[2]s/data"
  wal-dir = "%[2]s/wal"
  query-log-enabled = false
[http]
  bind-address = "127.0.0.1:%[3]d"
  auth-enabled = %[4]t
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
`, proctest.FreePort(t), s.dir, s.port, cfg.Username != "")
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		args = []string{"-config", conf}
	case VictoriaMetrics:
		args = []string{"-storageDataPath=" + filepath.Join(s.dir, "data"), "-httpListenAddr=" + s.Addr(),
			"-retentionPeriod=100y", "-loggerLevel=ERROR"}
		if cfg.Username != "" {
			args = append(args, "-httpAuth.username="+cfg.Username, "-httpAuth.password="+cfg.Password)
		}
	}
	health := s.URL() + "/ping"
	if cfg.Kind == VictoriaMetrics {
		health = s.URL() + "/health"
	}
	s.proc = proctest.New(t, proctest.Config{Name: "influxtest: " + filepath.Base(bin), Binary: bin, Args: args,
		Ready: answers(health), StartTimeout: startTimeout})
	s.Start()
	if cfg.Kind == InfluxDB && cfg.Username != "" {
		// With no user yet, InfluxDB takes this one statement without
		// credentials.
		s.query(fmt.Sprintf("CREATE USER %q WITH PASSWORD '%s' WITH ALL PRIVILEGES", cfg.Username, strings.ReplaceAll(cfg.Password, "'", `\'`)), "")
	}
	return s
}

// Addr returns the server's HTTP host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns the server's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Start starts the server again after Stop or Kill, with the same ports,
// configuration and data, and waits until it answers its health check. It
// does nothing if the server is running.
func (s *Server) Start() {
	s.t.Helper()
	s.proc.Start()
}

// answers returns a Ready that reports whether a GET of url succeeds.
func answers(url string) func() bool {
	return func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode < 300
	}
}

// Stop stops the server with SIGTERM and waits for it to exit. It does
// nothing if the server is not running.
func (s *Server) Stop() { s.proc.Stop() }

// Kill stops the server with SIGKILL. It does nothing if the server is
// not running.
func (s *Server) Kill() { s.proc.Kill() }

// Log returns what the running or last server process wrote.
func (s *Server) Log() string { return s.proc.Log() }

// CreateDatabase creates an InfluxDB database.
func (s *Server) CreateDatabase(name string) {
	s.t.Helper()
	s.query(fmt.Sprintf("CREATE DATABASE %q", name), "")
}

// Point is a point read back: its time in nanoseconds, tags and fields.
// Field values are json.Number, string or bool.
type Point struct {
	Time   int64
	Tags   map[string]string
	Fields map[string]any
}

// Points returns the points of measurement in the InfluxDB database db,
// in time order within each series.
func (s *Server) Points(db, measurement string) []Point {
	s.t.Helper()
	body := s.query(fmt.Sprintf("SELECT * FROM %q GROUP BY *", measurement), db)
	var v struct {
		Results []struct {
			Error  string `json:"error"`
			Series []struct {
				Tags    map[string]string `json:"tags"`
				Columns []string          `json:"columns"`
				Values  [][]any           `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		s.t.Fatalf("influxtest: query answer %s: %v", body, err)
	}
	var points []Point
	for _, r := range v.Results {
		if r.Error != "" {
			s.t.Fatalf("influxtest: query: %s", r.Error)
		}
		for _, ser := range r.Series {
			for _, row := range ser.Values {
				p := Point{Tags: ser.Tags, Fields: map[string]any{}}
				for i, c := range ser.Columns {
					switch {
					case c == "time":
						p.Time, _ = row[i].(json.Number).Int64()
					case row[i] != nil:
						p.Fields[c] = row[i]
					}
				}
				points = append(points, p)
			}
		}
	}
	return points
}

// query runs an InfluxQL statement and returns the answer's body.
func (s *Server) query(q, db string) []byte {
	s.t.Helper()
	form := url.Values{"q": {q}, "epoch": {"ns"}}
	if db != "" {
		form.Set("db", db)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/query", strings.NewReader(form.Encode()))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return s.do(req)
}

// Sample is a sample read back from VictoriaMetrics: its metric's labels
// (__name__ among them), value and time in milliseconds.
type Sample struct {
	Labels map[string]string
	Value  float64
	Time   int64
}

// Export returns every sample VictoriaMetrics holds of the series that
// match selects (a series selector such as {__name__="reading_n"}),
// duplicates included, after making what it took searchable.
func (s *Server) Export(match string) []Sample {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL()+"/internal/force_flush", nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.do(req)
	req, err = http.NewRequest(http.MethodPost, s.URL()+"/api/v1/export", strings.NewReader(url.Values{"match[]": {match}}.Encode()))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	body := s.do(req)
	var samples []Sample
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var v struct {
			Metric     map[string]string `json:"metric"`
			Values     []float64         `json:"values"`
			Timestamps []int64           `json:"timestamps"`
		}
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return samples
		} else if err != nil {
			s.t.Fatalf("influxtest: export answer: %v", err)
		}
		for i, val := range v.Values {
			samples = append(samples, Sample{Labels: v.Metric, Value: val, Time: v.Timestamps[i]})
		}
	}
}

// do makes req with the server's credentials and returns the body of a
// 2xx answer; it fails the test on any other.
func (s *Server) do(req *http.Request) []byte {
	s.t.Helper()
	if s.cfg.Username != "" {
		req.SetBasicAuth(s.cfg.Username, s.cfg.Password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("influxtest: %s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode >= 300 {
		s.t.Fatalf("influxtest: %s %s: %s %s %v", req.Method, req.URL.Path, resp.Status, body, err)
	}
	return body
}

// Kind returns the kind of the server.
func (s *Server) Kind() Kind { return s.cfg.Kind }
