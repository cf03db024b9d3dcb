// Command disorderplot draws docs/figures/throughput-disorder.svg from the
// output of BenchmarkReplayDisorder (connectors/replay), and prints the
// table of docs/figures.md: the median, least and most particles/s at each
// disorder, and the median's share of the in-order rate.
//
//	go test -run x -bench ReplayDisorder -benchtime 2x -count 5 ./connectors/replay > docs/figures/throughput-disorder.txt
//	go run ./internal/disorderplot < docs/figures/throughput-disorder.txt
//
// It uses only the standard library, so that the figure can be drawn again
// anywhere the benchmark runs.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// level is the measurements at one disorder.
type level struct {
	name  string
	rates []float64 // particles/s, one per benchmark line
}

func (l level) median() float64 {
	r := slices.Sorted(slices.Values(l.rates))
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

func (l level) least() float64 { return slices.Min(l.rates) }
func (l level) most() float64  { return slices.Max(l.rates) }

// benchLine matches a line of BenchmarkReplayDisorder's output: the
// disorder's name and the particles/s.
var benchLine = regexp.MustCompile(`^BenchmarkReplayDisorder/disorder=([^\s-]+)(?:-\d+)?\s.*?\s([0-9.e+]+) particles/s`)

// parse reads benchmark output and returns its levels in the order they
// first appear.
func parse(r io.Reader) ([]level, error) {
	var levels []level
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		rate, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("particles/s of %q: %w", sc.Text(), err)
		}
		i := slices.IndexFunc(levels, func(l level) bool { return l.name == m[1] })
		if i < 0 {
			levels = append(levels, level{name: m[1]})
			i = len(levels) - 1
		}
		levels[i].rates = append(levels[i].rates, rate)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the benchmark output: %w", err)
	}
	if len(levels) == 0 {
		return nil, fmt.Errorf("no BenchmarkReplayDisorder line with particles/s in the input")
	}
	return levels, nil
}

// table writes the Markdown table of levels.
func table(w io.Writer, levels []level) {
	fmt.Fprintln(w, "| disorder | particles/s (median) | least – most | of the in-order rate | runs |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	base := levels[0].median()
	for _, l := range levels {
		fmt.Fprintf(w, "| %s | %s | %s – %s | %.2f | %d |\n", l.name, mega(l.median()), mega(l.least()), mega(l.most()), l.median()/base, len(l.rates))
	}
}

// mega writes a rate in millions: 1.23M.
func mega(v float64) string { return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M" }

// The plot's size and margins, in SVG user units.
const (
	width, height                        = 640, 380
	padLeft, padRight, padTop, padBottom = 80, 30, 50, 70
)

// svg writes the plot of levels: the median of each as a point on a line,
// with a bar from the least to the most.
func svg(w io.Writer, levels []level) {
	var most float64
	for _, l := range levels {
		most = max(most, l.most())
	}
	step := 0.5e6
	for most/step > 8 {
		step *= 2
	}
	yMax := step * float64(int(most/step)+1)
	plotW, plotH := float64(width-padLeft-padRight), float64(height-padTop-padBottom)
	x := func(i int) float64 { return padLeft + plotW*(float64(i)+0.5)/float64(len(levels)) }
	y := func(v float64) float64 { return padTop + plotH*(1-v/yMax) }

	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %[1]d %[2]d" font-family="sans-serif" font-size="13">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(w, `<text x="%d" y="24" font-size="15" font-weight="bold">Replay throughput against disorder</text>`+"\n", padLeft)
	fmt.Fprintf(w, `<text x="%d" y="40" font-size="11" fill="#555">1M readings 1 ms apart, each delayed up to the disorder; window = disorder; %d runs</text>`+"\n", padLeft, len(levels[0].rates))
	for v := 0.0; v <= yMax+1; v += step {
		fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padLeft, width-padRight, y(v), y(v))
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", padLeft-8, y(v), tick(v))
	}
	fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="black"/>`+"\n", padLeft, width-padRight, y(0), y(0))
	fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%d" y2="%.1f" stroke="black"/>`+"\n", padLeft, padLeft, padTop, y(0))
	var points []string
	for i, l := range levels {
		fmt.Fprintf(w, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#1f77b4" stroke-width="2"/>`+"\n", x(i), x(i), y(l.least()), y(l.most()))
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(i), y(0)+20, l.name)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="start" font-size="11" fill="#1f77b4">%s</text>`+"\n", x(i)+8, y(l.median())-6, mega(l.median()))
		points = append(points, fmt.Sprintf("%.1f,%.1f", x(i), y(l.median())))
	}
	fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="#1f77b4" stroke-width="1.5"/>`+"\n", strings.Join(points, " "))
	for _, p := range points {
		xy := strings.Split(p, ",")
		fmt.Fprintf(w, `<circle cx="%s" cy="%s" r="4" fill="#1f77b4"/>`+"\n", xy[0], xy[1])
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">disorder: the longest delay of a reading</text>`+"\n", padLeft+plotW/2, height-18)
	fmt.Fprintf(w, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">particles/s, median (bar: range)</text>`+"\n", padTop+plotH/2)
	fmt.Fprintln(w, `</svg>`)
}

// tick writes a value of the y axis: 0, 0.5M, 1M.
func tick(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
}

func main() {
	out := flag.String("svg", "docs/figures/throughput-disorder.svg", "write the plot to this `FILE`")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *out); err != nil {
		fmt.Fprintln(os.Stderr, "disorderplot:", err)
		os.Exit(1)
	}
}

// run reads benchmark output from in, writes the plot to the file svgPath
// and the table to out.
func run(in io.Reader, out io.Writer, svgPath string) error {
	levels, err := parse(in)
	if err != nil {
		return err
	}
	var b strings.Builder
	svg(&b, levels)
	if err := os.WriteFile(svgPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	table(out, levels)
	return nil
}
