package pipeline

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// Load reads and parses the pipeline file at path.
func Load(path string) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return Parse(data, path)
}

// Parse parses and checks a pipeline. name is the file name used in
// errors. The error joins one [*Error] per problem, in file order.
func Parse(data []byte, name string) (*Pipeline, error) {
	d := &decoder{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 0
		if _, rest, ok := strings.Cut(err.Error(), "line "); ok {
			line, _ = strconv.Atoi(strings.TrimRightFunc(strings.SplitN(rest, ":", 2)[0], func(r rune) bool { return r < '0' || r > '9' }))
		}
		return nil, &Error{File: name, Line: line, Err: fmt.Errorf("not YAML: %w", err)}
	}
	p := &Pipeline{File: name}
	d.expand(&doc)
	if len(doc.Content) == 0 {
		d.fail(&doc, "empty pipeline: it needs sources and bolts")
		return nil, d.err()
	}
	root := d.mapping(doc.Content[0], "pipeline", "sources", "bolts", "acking", "checkpoints")
	if root == nil {
		return nil, d.err()
	}
	if n := root["acking"]; n != nil {
		d.acking(n, p)
	}
	if n := root["checkpoints"]; n != nil {
		d.checkpoints(n, p)
	}
	if n := root["sources"]; n == nil {
		d.fail(doc.Content[0], "pipeline: no sources")
	} else {
		for _, s := range d.list(n, "sources") {
			if src, ok := d.source(s); ok {
				p.Sources = append(p.Sources, src)
			}
		}
	}
	if n := root["bolts"]; n == nil {
		d.fail(doc.Content[0], "pipeline: no bolts")
	} else {
		for _, b := range d.list(n, "bolts") {
			if bolt, ok := d.bolt(b); ok {
				p.Bolts = append(p.Bolts, bolt)
			}
		}
	}
	d.check(p)
	if err := d.err(); err != nil {
		return nil, err
	}
	p.setDefaults()
	return p, nil
}

// decoder collects the problems of one file.
type decoder struct {
	file string
	errs []*Error
}

func (d *decoder) fail(n *yaml.Node, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Column: n.Column, Err: fmt.Errorf(format, args...)})
}

func (d *decoder) failAt(p pos, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: p.line, Column: p.col, Err: fmt.Errorf(format, args...)})
}

func (d *decoder) err() error {
	if len(d.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(d.errs, func(a, b *Error) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	errs := make([]error, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// nameOf returns what a component is called in errors: kind "name", or
// kind alone before its name is known.
func nameOf(n *yaml.Node, kind string) string {
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" && n.Content[i+1].Kind == yaml.ScalarNode && n.Content[i+1].Value != "" {
			return fmt.Sprintf("%s %q", kind, n.Content[i+1].Value)
		}
	}
	return kind
}

func at(n *yaml.Node) pos { return pos{n.Line, n.Column} }

// mapping returns the values of a mapping node by key, reporting unknown
// and repeated keys.
func (d *decoder) mapping(n *yaml.Node, what string, known ...string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		d.fail(n, "%s: want a mapping (key: value), got %s", what, kind(n))
		return nil
	}
	m := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(known, k.Value):
			d.fail(k, "%s: unknown key %q (known: %s)", what, k.Value, strings.Join(sorted(known), ", "))
		case m[k.Value] != nil:
			d.fail(k, "%s: %q given twice", what, k.Value)
		default:
			m[k.Value] = v
		}
	}
	return m
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func (d *decoder) list(n *yaml.Node, what string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "%s: want a list, got %s", what, kind(n))
		return nil
	}
	return n.Content
}

func (d *decoder) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		d.fail(n, "%s: want a non-empty string, got %s", what, kind(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) strs(n *yaml.Node, what string) []string {
	if n.Kind == yaml.ScalarNode {
		s, _ := d.str(n, what)
		return []string{s}
	}
	var out []string
	for _, e := range d.list(n, what) {
		if s, ok := d.str(e, what); ok {
			out = append(out, s)
		}
	}
	return out
}

// posInt parses an integer from 1 to most.
func (d *decoder) posInt(n *yaml.Node, what string, most int) int {
	v, err := strconv.Atoi(n.Value)
	switch {
	case n.Kind != yaml.ScalarNode || err != nil || v < 1:
		d.fail(n, "%s: want a positive integer, got %s", what, kind(n))
		return 1
	case v > most:
		d.fail(n, "%s: %d is more than the maximum, %d", what, v, most)
		return 1
	}
	return v
}

// bool parses true or false.
func (d *decoder) bool(n *yaml.Node, what string) bool {
	b, err := strconv.ParseBool(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		d.fail(n, "%s: want true or false, got %s", what, kind(n))
	}
	return b
}

// duration parses a Go duration such as 5s or 10m; negative values are
// allowed only where allowNegative says so (for "disabled").
func (d *decoder) duration(n *yaml.Node, what string, allowNegative bool) time.Duration {
	v, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || (v < 0 && !allowNegative) {
		d.fail(n, "%s: want a duration such as 5s or 10m, got %s", what, kind(n))
		return 0
	}
	return v
}

func (d *decoder) acking(n *yaml.Node, p *Pipeline) {
	m := d.mapping(n, "acking", "enabled", "max_pending", "progress_timeout", "hard_timeout", "max_attempts")
	if m == nil {
		return
	}
	a := &p.Acking
	if v := m["enabled"]; v != nil {
		a.Enabled = d.bool(v, "acking: enabled")
		p.ackingEnabledSet = true
	}
	if v := m["max_pending"]; v != nil {
		a.MaxPending = d.posInt(v, "acking: max_pending", MaxCount)
	}
	if v := m["max_attempts"]; v != nil {
		a.MaxAttempts = d.posInt(v, "acking: max_attempts", MaxAttempts)
	}
	if v := m["progress_timeout"]; v != nil {
		a.ProgressTimeout = d.duration(v, "acking: progress_timeout", false)
	}
	if v := m["hard_timeout"]; v != nil {
		a.HardTimeout = d.duration(v, "acking: hard_timeout", false)
	}
}

func (d *decoder) checkpoints(n *yaml.Node, p *Pipeline) {
	m := d.mapping(n, "checkpoints", "dir", "interval")
	if m == nil {
		return
	}
	if v := m["dir"]; v != nil {
		p.Checkpoints.Dir, _ = d.str(v, "checkpoints: dir")
	} else {
		d.fail(n, "checkpoints: no dir: set the directory that keeps them")
	}
	if v := m["interval"]; v != nil {
		p.Checkpoints.Interval = d.duration(v, "checkpoints: interval", false)
	}
}

func (d *decoder) source(n *yaml.Node) (Source, bool) {
	types := SourceTypes()
	m := d.mapping(n, nameOf(n, "source"), append([]string{"name", "parallelism"}, types...)...)
	if m == nil {
		return Source{}, false
	}
	name, what, parallelism := d.component(n, m, "source")
	s := Source{Name: name, Parallelism: parallelism, pos: at(n)}
	var given []string
	for _, k := range types {
		if m[k] != nil {
			given = append(given, k)
		}
	}
	switch len(given) {
	case 0:
		d.fail(n, "%s: no type: set %s", what, oneOf(types, "or"))
	case 1:
		s.Type = given[0]
		t, _ := sourceTypes.get(s.Type)
		t.decode(d, m[s.Type], what, &s)
	default:
		d.fail(n, "%s: set one type, not %s", what, oneOf(given, "and"))
	}
	// A source with problems still declares its name, so that its
	// consumers get no errors of their own.
	return s, true
}

// component decodes the name and parallelism shared by sources and bolts
// of kind; what names the component in messages.
func (d *decoder) component(n *yaml.Node, m map[string]*yaml.Node, kind string) (name, what string, parallelism int) {
	what, parallelism = kind, 1
	if v := m["name"]; v == nil {
		d.fail(n, "%s: no name", kind)
	} else if s, ok := d.str(v, kind+": name"); ok {
		name, what = s, fmt.Sprintf("%s %q", kind, s)
	}
	if v := m["parallelism"]; v != nil {
		parallelism = d.posInt(v, what+": parallelism", MaxParallelism)
	}
	return name, what, parallelism
}

func (d *decoder) bolt(n *yaml.Node) (Bolt, bool) {
	m := d.mapping(n, nameOf(n, "bolt"), "name", "input", "inputs", "parallelism", "window", "idle_timeout", "future_bound", "late", "op", "sink")
	if m == nil {
		return Bolt{}, false
	}
	name, what, parallelism := d.component(n, m, "bolt")
	b := Bolt{Name: name, Parallelism: parallelism, pos: at(n), set: map[string]bool{}}
	switch {
	case m["input"] != nil && m["inputs"] != nil:
		d.fail(n, "%s: set input or inputs, not both", what)
	case m["input"] != nil:
		b.Inputs = append(b.Inputs, d.input(m["input"], what))
	case m["inputs"] != nil:
		for _, in := range d.list(m["inputs"], what+": inputs") {
			b.Inputs = append(b.Inputs, d.input(in, what))
		}
	default:
		d.fail(n, "%s: no input", what)
	}
	if v := m["window"]; v != nil {
		b.Buffer.Window = d.duration(v, what+": window", false)
	}
	if v := m["idle_timeout"]; v != nil {
		b.Buffer.IdleTimeout = d.duration(v, what+": idle_timeout", true)
		b.set["idle_timeout"] = true
	}
	if v := m["future_bound"]; v != nil {
		b.Buffer.FutureBound = d.duration(v, what+": future_bound", true)
		b.set["future_bound"] = true
	}
	if v := m["late"]; v != nil {
		late, err := syncbuffer.ParseLatePolicy(v.Value)
		if err != nil {
			d.fail(v, "%s: late: %v (known: drop, side, pass)", what, err)
		}
		b.Buffer.Late = late
	}
	switch {
	case m["op"] != nil && m["sink"] != nil:
		d.fail(n, "%s: set op or sink, not both", what)
	case m["op"] != nil:
		d.op(m["op"], what, &b)
	case m["sink"] != nil:
		b.Sink = d.sink(m["sink"], what, b.Name)
	default:
		d.fail(n, "%s: set op (an operation) or sink", what)
	}
	return b, true
}

func (d *decoder) input(n *yaml.Node, what string) Input {
	in := Input{Grouping: "shuffle", pos: at(n)}
	if n.Kind == yaml.ScalarNode {
		in.From, _ = d.str(n, what+": input")
		return in
	}
	m := d.mapping(n, what+": input", "from", "stream", "grouping", "fields")
	if m == nil {
		return in
	}
	if v := m["from"]; v == nil {
		d.fail(n, "%s: input: no from", what)
	} else {
		in.From, _ = d.str(v, what+": input: from")
		in.pos = at(v)
	}
	if v := m["stream"]; v != nil {
		in.Stream, _ = d.str(v, what+": input: stream")
	}
	if v := m["grouping"]; v != nil {
		in.Grouping = v.Value
		if _, ok := groupingTypes.get(in.Grouping); !ok {
			d.fail(v, "%s: unknown grouping %q (known: %s)", what, v.Value, strings.Join(sorted(groupingTypes.list()), ", "))
		}
	}
	if v := m["fields"]; v != nil {
		in.Fields = d.strs(v, what+": input: fields")
	}
	g, _ := groupingTypes.get(in.Grouping)
	switch {
	case g.fields && len(in.Fields) == 0:
		d.fail(n, "%s: %s grouping without fields", what, in.Grouping)
	case !g.fields && len(in.Fields) > 0:
		d.fail(m["fields"], "%s: fields given for a %s grouping", what, in.Grouping)
	}
	return in
}

func (d *decoder) sink(n *yaml.Node, what, name string) *Sink {
	types := SinkTypes()
	m := d.mapping(n, what+": sink", append([]string{"precision", "append"}, types...)...)
	if m == nil {
		return nil
	}
	s := &Sink{}
	var prec *particle.Precision
	if v := m["precision"]; v != nil {
		p, err := particle.ParsePrecision(v.Value)
		if err != nil {
			d.fail(v, "%s: sink: precision: %v", what, err)
		}
		s.Precision, prec = p, &p
	}
	var given []string
	for _, k := range types {
		if m[k] != nil {
			given = append(given, k)
		}
	}
	switch len(given) {
	case 0:
		d.fail(n, "%s: sink: set %s", what, oneOf(append([]string{"file (a path, or - for standard output)"}, types[1:]...), "or"))
	case 1:
		s.Type = given[0]
		t, _ := sinkTypes.get(s.Type)
		t.decode(d, m[s.Type], what, name, prec, s)
	default:
		d.fail(n, "%s: sink: set one type, not %s (add a bolt for each other)", what, oneOf(given, "and"))
	}
	if v := m["append"]; v != nil {
		s.Append = d.bool(v, what+": sink: append")
		if s.Type != "file" || s.File == "-" {
			d.fail(v, "%s: sink: append applies to a file sink writing a file", what)
		}
	}
	return s
}

// check reports problems between components: names, inputs.
func (d *decoder) check(p *Pipeline) {
	names := map[string]bool{}
	declare := func(name string, at pos) {
		if name == "" {
			return
		}
		if names[name] {
			d.failAt(at, "component name %q used twice", name)
		}
		names[name] = true
	}
	var speed *Source
	for i, s := range p.Sources {
		declare(s.Name, s.pos)
		if s.File == nil {
			continue
		}
		if s.Parallelism > 1 {
			d.failAt(s.pos, "source %q: a file source has one instance, not %d", s.Name, s.Parallelism)
		}
		if speed == nil {
			speed = &p.Sources[i]
		} else if speed.File.Speed != s.File.Speed {
			d.failAt(s.pos, "source %q: speed %v differs from source %q's %v: the stream clocks have one speed", s.Name, s.File.Speed, speed.Name, speed.File.Speed)
		}
	}
	for _, b := range p.Bolts {
		declare(b.Name, b.pos)
	}
	d.checkMQTT(p)
	parallelism := map[string]int{}
	for _, b := range p.Bolts {
		parallelism[b.Name] = b.Parallelism
	}
	for _, b := range p.Bolts {
		for _, in := range b.Inputs {
			if in.From != "" && !names[in.From] {
				d.failAt(in.pos, "bolt %q: input from unknown component %q (known: %s)", b.Name, in.From, strings.Join(sorted(keys(names)), ", "))
			}
			if in.From == b.Name && in.From != "" {
				d.failAt(in.pos, "bolt %q: input from itself", b.Name)
			}
			if in.Grouping == "forward" && names[in.From] {
				d.checkForward(b, in, parallelism)
			}
		}
	}
	d.checkCycles(p)
}

// checkForward checks a forward input of b, from a known component: it
// comes from a bolt of b's parallelism (see topology.Forward), parallelism
// giving the bolts'.
func (d *decoder) checkForward(b Bolt, in Input, parallelism map[string]int) {
	up, ok := parallelism[in.From]
	switch {
	case !ok:
		d.failAt(in.pos, "bolt %q: forward input from source %q: a forward edge starts at a bolt", b.Name, in.From)
	case up != b.Parallelism:
		d.failAt(in.pos, "bolt %q: forward input from %q: parallelism %d, %q's %d: a forward edge joins bolts of the same parallelism", b.Name, in.From, b.Parallelism, in.From, up)
	}
}

// checkCycles reports a cycle among the bolts, which the engine refuses:
// end of stream could never flow through it. It names the input that
// closes the cycle.
func (d *decoder) checkCycles(p *Pipeline) {
	bolts := map[string]*Bolt{}
	for i := range p.Bolts {
		bolts[p.Bolts[i].Name] = &p.Bolts[i]
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(b *Bolt) bool
	visit = func(b *Bolt) bool {
		state[b.Name] = onPath
		path = append(path, b.Name)
		for _, in := range b.Inputs {
			up := bolts[in.From]
			if up == nil || in.From == b.Name {
				continue // a source, an unknown name, or itself: reported above
			}
			switch state[in.From] {
			case onPath:
				cycle := append(slices.Clone(path[slices.Index(path, in.From):]), in.From)
				slices.Reverse(cycle)
				d.failAt(in.pos, "bolt %q: cycle %s: end of stream could never flow", b.Name, strings.Join(cycle, " -> "))
				return true
			case unseen:
				if visit(up) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[b.Name] = done
		return false
	}
	for i := range p.Bolts {
		if state[p.Bolts[i].Name] == unseen && visit(&p.Bolts[i]) {
			return
		}
	}
}

// expand replaces ${NAME} in the file's values by the environment
// variable NAME, and $${ by a literal ${. A variable that is not set is an
// error at its value: a pipeline should not silently run with an empty
// broker URL or path.
func (d *decoder) expand(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		n.Value = d.expandValue(n, n.Value)
	}
	for _, c := range n.Content {
		d.expand(c)
	}
}

func (d *decoder) expandValue(n *yaml.Node, s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1] + "${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			d.fail(n, "unterminated ${ in %q: write ${NAME}, or $${ for a literal ${", n.Value)
			return n.Value
		}
		name := s[i+2 : i+end]
		v, ok := os.LookupEnv(name)
		switch {
		case !validEnvName(name):
			d.fail(n, "bad variable name %q in %q: write ${NAME} with letters, digits and _", name, n.Value)
		case !ok:
			d.fail(n, "environment variable %s is not set", name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
