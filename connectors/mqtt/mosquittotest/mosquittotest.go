// Package mosquittotest runs a private Mosquitto broker for tests: on a
// free loopback port, with its own configuration file and persistence
// directory, so that a test can stop it, kill it with SIGKILL and start it
// again on the same port while clients reconnect.
//
// It needs the mosquitto binary (Debian package mosquitto). When the
// binary is missing the test fails, saying what to install: a broker test
// that skips would pass without testing anything.
//
// It is not a broker for production use and never touches a broker it did
// not start.
package mosquittotest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/internal/proctest"
)

// Stock broker limits of Mosquitto 2.0, written into every configuration
// so that a test measures what users of an untuned broker get.
const (
	StockMaxInflight = 20
	StockMaxQueued   = 1000
)

// startTimeout bounds how long a broker may take to accept connections.
const startTimeout = 10 * time.Second

// Config configures a Broker. The zero Config is Mosquitto's stock
// configuration on a free loopback port, without persistence.
type Config struct {
	// Persistence saves sessions and queued messages to the broker's
	// directory on shutdown, so that they survive Stop and Start.
	// Defaults to false.
	Persistence bool
	// MaxInflight is max_inflight_messages. Defaults to StockMaxInflight.
	MaxInflight int
	// MaxQueued is max_queued_messages. Defaults to StockMaxQueued.
	MaxQueued int
	// Users are the usernames and passwords the broker accepts; with any,
	// it refuses anonymous clients. Defaults to none: anonymous clients
	// only.
	Users map[string]string
	// TLS makes the listener speak TLS, with a certificate for 127.0.0.1
	// signed by a certificate authority made for the broker (CAFile).
	// Defaults to false: plain TCP.
	TLS bool
	// Extra is appended to the configuration file. Paths in it are the
	// caller's.
	Extra string
}

// Broker is a Mosquitto process owned by a test.
type Broker struct {
	t    testing.TB
	dir  string
	port int
	tls  bool
	proc *proctest.Process
}

// Binary returns the path of the mosquitto binary, or an error telling
// what to install.
func Binary() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/local/bin/mosquitto"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mosquittotest: the mosquitto binary is missing: install the Debian package `mosquitto` (apt-get install -y mosquitto)")
}

// Start starts a broker configured by cfg on a free loopback port and
// stops it when the test ends. It fails the test if the broker cannot be
// started.
func Start(t testing.TB, cfg Config) *Broker {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxInflight == 0 {
		cfg.MaxInflight = StockMaxInflight
	}
	if cfg.MaxQueued == 0 {
		cfg.MaxQueued = StockMaxQueued
	}
	b := &Broker{t: t, dir: t.TempDir(), port: proctest.FreePort(t), tls: cfg.TLS}
	conf := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous %t\nmax_inflight_messages %d\nmax_queued_messages %d\npersistence %t\npersistence_location %s/\nlog_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\n",
		b.port, len(cfg.Users) == 0, cfg.MaxInflight, cfg.MaxQueued, cfg.Persistence, b.dir)
	if len(cfg.Users) > 0 {
		conf += "password_file " + b.writePasswords(cfg.Users) + "\n"
	}
	if cfg.TLS {
		conf += b.writeCertificates()
	}
	// Mosquitto started as root switches to user mosquitto, which would
	// clear the parent-death signal: stay the user running the test.
	if u, err := user.Current(); err == nil {
		conf += "user " + u.Username + "\n"
	}
	if cfg.Extra != "" {
		conf += cfg.Extra + "\n"
	}
	if err := os.WriteFile(b.ConfigPath(), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	b.proc = proctest.New(t, proctest.Config{Name: "mosquittotest: mosquitto", Binary: bin, Args: []string{"-c", b.ConfigPath()},
		Ready: proctest.Listening(b.Addr()), StartTimeout: startTimeout})
	b.Start()
	return b
}

// ConfigPath returns the path of the broker's configuration file.
func (b *Broker) ConfigPath() string { return filepath.Join(b.dir, "mosquitto.conf") }

// Addr returns the broker's host:port.
func (b *Broker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// URL returns the broker's URL for MQTT clients: tcp://127.0.0.1:port,
// or ssl://127.0.0.1:port with TLS.
func (b *Broker) URL() string {
	if b.tls {
		return "ssl://" + b.Addr()
	}
	return "tcp://" + b.Addr()
}

// CAFile returns the path of the PEM certificate of the authority that
// signed the broker's certificate, when the broker speaks TLS.
func (b *Broker) CAFile() string { return filepath.Join(b.dir, "ca.pem") }

// writePasswords writes users into a Mosquitto password file, hashed by
// mosquitto_passwd, and returns its path.
func (b *Broker) writePasswords(users map[string]string) string {
	b.t.Helper()
	bin, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		b.t.Fatal("mosquittotest: mosquitto_passwd is missing: install the Debian package `mosquitto`")
	}
	path := filepath.Join(b.dir, "passwords")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		b.t.Fatal(err)
	}
	for u, p := range users {
		if out, err := exec.Command(bin, "-b", path, u, p).CombinedOutput(); err != nil {
			b.t.Fatalf("mosquittotest: mosquitto_passwd: %v: %s", err, out)
		}
	}
	return path
}

// Start starts the broker again after Stop or Kill, on the same port with
// the same configuration and persistence directory, and waits until it
// accepts connections. It does nothing if the broker is running.
func (b *Broker) Start() {
	b.t.Helper()
	b.proc.Start()
}

// Stop stops the broker with SIGTERM and waits for it to exit; with
// persistence on, it saves its state first. It does nothing if the broker
// is not running.
func (b *Broker) Stop() { b.proc.Stop() }

// Kill stops the broker with SIGKILL: what it did not save is lost. It does
// nothing if the broker is not running.
func (b *Broker) Kill() { b.proc.Kill() }

// Restart stops the broker with SIGTERM and starts it again.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Stop()
	b.Start()
}

// Log returns what the running or last broker process wrote.
func (b *Broker) Log() string { return b.proc.Log() }

// LockedBuffer collects a process's output while the test reads it: a
// bytes.Buffer safe for concurrent Write and String. The zero value is
// ready to use.
type LockedBuffer = proctest.LockedBuffer
