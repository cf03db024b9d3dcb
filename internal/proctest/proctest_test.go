package proctest_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/internal/proctest"
)

// listenArg makes the test binary a server for the tests: it listens on
// the address after it until killed.
const listenArg = "proctest-listen="

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && strings.HasPrefix(os.Args[1], listenArg) {
		serve(strings.TrimPrefix(os.Args[1], listenArg))
		return
	}
	goleak.VerifyTestMain(m)
}

func serve(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening on", l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		c.Close()
	}
}

// A process is ready once it listens, stops on Stop, starts again on
// Start with the same arguments, and is killed when the test ends.
func TestStopAndStartAgain(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(proctest.FreePort(t)))
	p := proctest.New(t, proctest.Config{Name: "proctest: server", Binary: os.Args[0], Args: []string{listenArg + addr},
		Ready: proctest.Listening(addr), StartTimeout: 20 * time.Second})
	p.Start()
	// The process may accept a client before its output has been copied
	// from the pipe.
	assert.Eventually(t, func() bool { return strings.Contains(p.Log(), "listening on "+addr) },
		10*time.Second, 10*time.Millisecond, "log: %q", p.Log())
	p.Stop()
	assert.False(t, proctest.Listening(addr)(), "listening after Stop")
	p.Start()
	assert.True(t, proctest.Listening(addr)())
}
