package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// cli is the command line of one command: its flags, with the logging
// flags every command has, and its usage text.
type cli struct {
	name   string
	usage  string // printed before the flags: synopsis and description
	fs     *flag.FlagSet
	log    logFlags
	stderr io.Writer
}

// newCLI returns the command line of the command name, whose usage text
// starts with usage, logging at info level by default as every command.
func newCLI(name, usage string, stderr io.Writer) *cli {
	c := &cli{name: name, usage: usage, fs: flag.NewFlagSet(name, flag.ContinueOnError), stderr: stderr}
	c.fs.SetOutput(stderr)
	// parse prints the usage itself: to stdout when asked for, and only a
	// hint after the error flag prints to stderr otherwise.
	c.fs.Usage = func() {}
	c.log.register(c.fs, slog.LevelInfo)
	return c
}

// parse parses args, where flags may come before, between and after the
// positional arguments ("--" ends the flags), and returns the positional
// arguments. If it returns false the command must return code: -h and
// --help print the usage to stdout and give exitOK, a bad flag gives
// exitUsage.
func (c *cli) parse(args []string, stdout io.Writer) (positional []string, code int, ok bool) {
	for {
		err := c.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(stdout)
			return nil, exitOK, false
		}
		if err != nil {
			c.hint()
			return nil, exitUsage, false
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			return positional, exitOK, true
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), exitOK, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// flagName is where the flag package's usage names a flag "-name".
var flagName = regexp.MustCompile(`(?m)^  -`)

// printUsage writes the usage text and the flags to w, named --flag as
// in the README (the flag package takes both).
func (c *cli) printUsage(w io.Writer) {
	fmt.Fprint(w, c.usage)
	fmt.Fprintln(w, "\nFlags:")
	var b strings.Builder
	c.fs.SetOutput(&b)
	c.fs.PrintDefaults()
	c.fs.SetOutput(c.stderr)
	fmt.Fprint(w, flagName.ReplaceAllString(b.String(), "  --"))
}

// hint tells where the usage is, after an error on stderr.
func (c *cli) hint() {
	fmt.Fprintf(c.stderr, "Run \"sensorstorm help %s\" for usage.\n", c.name)
}

// usageError reports a mistake on the command line and returns exitUsage.
func (c *cli) usageError(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "sensorstorm %s: %s\n", c.name, fmt.Sprintf(format, args...))
	c.hint()
	return exitUsage
}

// missing returns the first of the named flags that was not given, or "".
func (c *cli) missing(names ...string) string {
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, n := range names {
		if !set[n] {
			return n
		}
	}
	return ""
}

// durationFlag is a time.Duration flag whose error shows what a duration
// looks like: flag.Duration only says "parse error".
type durationFlag time.Duration

// durationVar defines a duration flag.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationFlag)(p), name, usage)
}

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err == nil {
		*d = durationFlag(v)
		return nil
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
		return fmt.Errorf("a duration needs a unit: %ss, %sms or %sm, for example", s, s, s)
	}
	return errors.New("want a duration such as 500ms, 2s, 1m30s or 1h")
}

// listenAddr completes an address to listen on: a port alone (9090 or
// :9090) means localhost, so that serving on every interface is a choice
// made explicitly (0.0.0.0:9090 or [::]:9090).
func listenAddr(addr string) (string, error) {
	if _, err := strconv.ParseUint(addr, 10, 16); err == nil {
		return net.JoinHostPort("localhost", addr), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want HOST:PORT, such as localhost:9090, or a port: %w", err)
	}
	if host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port), nil
}

// addrUsage ends the usage of a flag taking an address to listen on.
const addrUsage = "; a port alone (9090 or :9090) listens on localhost only, 0.0.0.0:9090 on every interface"
