package netnstest_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/internal/netnstest"
)

// echoEnv makes the test binary an echo server on the address in the
// variable, until killed.
const echoEnv = "NETNSTEST_ECHO"

func TestMain(m *testing.M) {
	if addr := os.Getenv(echoEnv); addr != "" {
		os.Exit(echo(addr))
	}
	goleak.VerifyTestMain(m)
}

func echo(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return 1
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return 1
		}
		go func() {
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					c.Close()
					return
				}
				if _, err := c.Write([]byte(line)); err != nil {
					return
				}
			}
		}()
	}
}

// A machine reached from the test process through the bridge: once cut,
// new connections fail and an established one goes silent without an
// error; once restored, what was sent meanwhile arrives.
func TestCutAndRestore(t *testing.T) {
	nw := netnstest.New(t, 1)
	m := nw.Machines[0]
	addr := net.JoinHostPort(m.Addr, "7000")
	cmd := m.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), echoEnv+"="+addr)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var c net.Conn
	require.Eventually(t, func() bool {
		var err error
		c, err = net.DialTimeout("tcp", addr, time.Second)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the echo server in the namespace accepts")
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(line string, within time.Duration) (string, error) {
		require.NoError(t, c.SetDeadline(time.Now().Add(within)))
		if _, err := c.Write([]byte(line)); err != nil {
			return "", err
		}
		return r.ReadString('\n')
	}
	got, err := roundTrip("before\n", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "before\n", got)

	m.Cut(t)
	_, err = net.DialTimeout("tcp", addr, 500*time.Millisecond)
	require.Error(t, err, "a new connection while cut")
	_, err = roundTrip("during\n", 500*time.Millisecond)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "an established connection goes silent: %v", err)

	m.Restore(t)
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	got, err = r.ReadString('\n')
	require.NoError(t, err, "what was sent while cut arrives")
	require.Equal(t, "during\n", got)
}
