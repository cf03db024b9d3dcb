package pipeline

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
)

// opType is an operation a pipeline can name.
type opType struct {
	// params is a pointer to the zero configuration decoded from the op's
	// keys.
	params func() any
	// exclude lists keys of params the type does not take.
	exclude []string
	// build checks the decoded params and returns the factory and how long
	// the operation holds particles (-1: unbounded).
	build func(params any) (operation.Factory, time.Duration, error)
}

type windowParams struct {
	ops.StatsConfig `yaml:",inline"`
	// Percentiles are added to the aggregates as pNN.
	Percentiles []float64 `yaml:"percentiles"`
}

func windowOp(aggregate string) opType {
	exclude := []string{"aggregates", "percentiles"}
	switch aggregate {
	case "":
		exclude = nil
	case "percentile":
		exclude = []string{"aggregates"}
	}
	return opType{
		params:  func() any { return &windowParams{} },
		exclude: exclude,
		build: func(v any) (operation.Factory, time.Duration, error) {
			p := v.(*windowParams)
			cfg := p.StatsConfig
			if aggregate != "" && aggregate != "percentile" {
				cfg.Aggregates = []string{aggregate}
			}
			for _, pct := range p.Percentiles {
				cfg.Aggregates = append(cfg.Aggregates, "p"+strconv.FormatFloat(pct, 'g', -1, 64))
			}
			if aggregate == "percentile" && len(p.Percentiles) == 0 {
				cfg.Aggregates = []string{"p50"}
			}
			f, err := operation.FactoryOf(ops.NewStats, cfg)
			if err != nil {
				return nil, 0, err
			}
			if cfg.Count > 0 {
				return f, -1, nil
			}
			return f, max(cfg.Size, cfg.Gap), nil
		},
	}
}

// simpleOp is an operation whose config constructs it directly.
func simpleOp[C any](newOp func(C) (operation.Operation, error), span func(*C) time.Duration) opType {
	return opType{
		params: func() any { return new(C) },
		build: func(v any) (operation.Factory, time.Duration, error) {
			cfg := *v.(*C)
			f, err := operation.FactoryOf(newOp, cfg)
			if err != nil || span == nil {
				return f, 0, err
			}
			return f, span(&cfg), nil
		},
	}
}

// accepted returns v, made again from a config its constructor accepted
// before. The constructors only validate their configs, so an error is a
// broken invariant.
func accepted[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("pipeline: a config accepted before was refused: %v", err))
	}
	return v
}

// opTypes are the operations pipelines can name: the built-ins, and those
// registered (RegisterOperation).
var opTypes = newRegistry("operation type", nil,
	builtin[opType]{"window-mean", windowOp("mean")},
	builtin[opType]{"window-min", windowOp("min")},
	builtin[opType]{"window-max", windowOp("max")},
	builtin[opType]{"window-count", windowOp("count")},
	builtin[opType]{"window-sum", windowOp("sum")},
	builtin[opType]{"window-stddev", windowOp("stddev")},
	builtin[opType]{"window-percentile", windowOp("percentile")},
	builtin[opType]{"window-stats", windowOp("")},
	builtin[opType]{"threshold", simpleOp(ops.NewThreshold, nil)},
	builtin[opType]{"rate-of-change", simpleOp(ops.NewRateOfChange, nil)},
	builtin[opType]{"dedup", simpleOp(ops.NewDedup, nil)},
	builtin[opType]{"resample", simpleOp(ops.NewResample, nil)},
	builtin[opType]{"align", simpleOp(ops.NewAlign, func(c *ops.AlignConfig) time.Duration { return c.Bucket })},
	builtin[opType]{"filter", simpleOp(ops.NewFilter, nil)},
)

// RegisterOperation makes the operation type name available to pipeline
// files, like the built-in ones: the keys of a bolt's op other than type
// are decoded into a C, by its yaml tags, and newOp makes each instance's
// operation from it. Parsing checks the config by making one operation:
// newOp must refuse a config then or never. An operation that is an
// operation.Spanner tells how long it holds particles. RegisterOperation
// panics if name is empty or taken; call it before parsing, as from an
// init function.
func RegisterOperation[C any](name string, newOp func(C) (operation.Operation, error)) {
	opTypes.add("RegisterOperation", name, simpleOp(newOp, func(c *C) time.Duration {
		if s, ok := accepted(newOp(*c)).(operation.Spanner); ok {
			return s.Span()
		}
		return 0
	}))
}

// OpTypes returns the names of the operation types, built-in and
// registered, sorted.
func OpTypes() []string { return sorted(opTypes.list()) }

func (d *decoder) op(n *yaml.Node, what string, b *Bolt) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, "%s: op: want a mapping with a type, got %s", what, kind(n))
		return
	}
	var typeNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "type" {
			typeNode = n.Content[i+1]
		}
	}
	if typeNode == nil {
		d.fail(n, "%s: op: no type (known: %s)", what, strings.Join(OpTypes(), ", "))
		return
	}
	t, ok := opTypes.get(typeNode.Value)
	if !ok {
		d.fail(typeNode, "%s: unknown op type %q (known: %s)", what, typeNode.Value, strings.Join(OpTypes(), ", "))
		return
	}
	b.Op = typeNode.Value
	params := t.params()
	body := *n
	body.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "type" {
			body.Content = append(body.Content, n.Content[i], n.Content[i+1])
		}
	}
	if !d.decodeStruct(&body, reflect.ValueOf(params).Elem(), what+": op "+b.Op, t.exclude...) {
		return
	}
	f, span, err := t.build(params)
	if err != nil {
		d.fail(n, "%s: op %s: %v", what, b.Op, err)
		return
	}
	b.factory, b.span = f, span
}
