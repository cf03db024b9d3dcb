// Command disorder makes testdata/library1-disordered.lp from
// testdata/library1-r1.lp: the first two hours of the recording, each
// reading delayed as by a lossy uplink and written in the order it would
// arrive, its timestamp unchanged. Most delays are a few seconds (the order
// within a window changes); one reading in fifty waits two to six minutes
// (a mote's radio link down), later than any short window. The seed is
// fixed, so the output is the same on every run:
//
//	go run ./testdata/disorder < testdata/library1-r1.lp > testdata/library1-disordered.lp
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"
)

const span = 2 * time.Hour

type reading struct {
	line    []byte
	arrival int64
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "disorder:", err)
		os.Exit(1)
	}
}

func run() error {
	rng := rand.New(rand.NewPCG(30, 2006))
	sc := bufio.NewScanner(os.Stdin)
	var readings []reading
	var first int64
	for sc.Scan() {
		line := slices.Clone(sc.Bytes())
		t, err := strconv.ParseInt(string(line[bytes.LastIndexByte(line, ' ')+1:]), 10, 64)
		if err != nil {
			return fmt.Errorf("timestamp of %q: %w", line, err)
		}
		if first == 0 {
			first = t
		}
		if t-first >= int64(span) {
			break
		}
		delay := time.Duration(rng.ExpFloat64() * float64(4*time.Second))
		if rng.IntN(50) == 0 {
			delay = 2*time.Minute + time.Duration(rng.Int64N(int64(4*time.Minute)))
		}
		readings = append(readings, reading{line, t + int64(delay)})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading: %w", err)
	}
	slices.SortStableFunc(readings, func(a, b reading) int { return cmp.Compare(a.arrival, b.arrival) })
	w := bufio.NewWriter(os.Stdout)
	for _, r := range readings {
		w.Write(r.line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return nil
}
