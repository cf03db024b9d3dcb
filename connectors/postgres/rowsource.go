package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sensorstorm/sensorstorm/particle"
)

// rowSource gives the rows of a batch to COPY as the values of the
// columns names. It fills one row of values at a time with pointers into
// its own cells, rather than boxing each value, which would cost an
// allocation per value: pgx encodes a row before it asks for the next.
type rowSource struct {
	rows   []row
	index  map[string]int // position in names of each tag and field key
	pos    []int          // positions of the current row's tags, then fields
	next   int
	values []any
	time   eventTime
	epoch  pgtype.Int8 // of every row: NULL without checkpoints
	cells  []cell
}

// cell holds the value of one column of the current row, in the field
// that its column's type takes.
type cell struct {
	text  pgtype.Text
	float pgtype.Float8
	int   pgtype.Int8
	bool  pgtype.Bool
}

var _ pgx.CopyFromSource = (*rowSource)(nil)

// newRowSource returns a source of rows as the columns names: time,
// time_ns, series, measurement, epoch, then the tag and field keys of the
// rows. Every row has epoch.
func newRowSource(rows []row, names []string, epoch pgtype.Int8) *rowSource {
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	return &rowSource{rows: rows, index: index, epoch: epoch, values: make([]any, len(names)), cells: make([]cell, len(names))}
}

// Next implements pgx.CopyFromSource.
func (s *rowSource) Next() bool {
	s.next++
	return s.next <= len(s.rows)
}

// Values implements pgx.CopyFromSource. The values point into s and hold
// until the next call.
func (s *rowSource) Values() ([]any, error) {
	r := &s.rows[s.next-1]
	p := &r.p
	if s.next == 1 || !r.likePrev {
		s.pos = s.pos[:0]
		for _, t := range p.Tags {
			s.pos = append(s.pos, s.index[t.Key])
		}
		for _, f := range p.Fields {
			s.pos = append(s.pos, s.index[f.Key])
		}
	}
	clear(s.values) // a column this row does not fill is NULL
	s.time = eventTime(p.Time)
	s.values[0] = &s.time
	s.cells[1].int = pgtype.Int8{Int64: p.Time, Valid: true}
	s.values[1] = &s.cells[1].int
	s.values[2] = s.setText(2, r.series)
	s.values[3] = s.setText(3, p.Measurement)
	s.values[4] = &s.epoch
	for i, t := range p.Tags {
		s.values[s.pos[i]] = s.setText(s.pos[i], t.Value)
	}
	for i, f := range p.Fields {
		k := s.pos[len(p.Tags)+i]
		c := &s.cells[k]
		switch f.Value.Kind() {
		case particle.KindFloat:
			c.float = pgtype.Float8{Float64: f.Value.FloatValue(), Valid: true}
			s.values[k] = &c.float
		case particle.KindInt:
			c.int = pgtype.Int8{Int64: f.Value.IntValue(), Valid: true}
			s.values[k] = &c.int
		case particle.KindUint:
			c.int = pgtype.Int8{Int64: int64(f.Value.UintValue()), Valid: true} // checked to fit by fitValues
			s.values[k] = &c.int
		case particle.KindBool:
			c.bool = pgtype.Bool{Bool: f.Value.BoolValue(), Valid: true}
			s.values[k] = &c.bool
		default:
			s.values[k] = s.setText(k, f.Value.StringValue())
		}
	}
	return s.values, nil
}

// setText puts v in the text of cell k and returns a pointer to it.
func (s *rowSource) setText(k int, v string) *pgtype.Text {
	s.cells[k].text = pgtype.Text{String: v, Valid: true}
	return &s.cells[k].text
}

// Err implements pgx.CopyFromSource: giving rows cannot fail.
func (s *rowSource) Err() error { return nil }

// eventTime is a particle's time in nanoseconds since the Unix epoch, as
// pgx encodes it for a timestamptz column and, in UTC, for a timestamp
// one (a table made by hand).
type eventTime int64

// TimestamptzValue implements pgtype.TimestamptzValuer.
func (t eventTime) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: time.Unix(0, int64(t)).UTC(), Valid: true}, nil
}

// TimestampValue implements pgtype.TimestampValuer.
func (t eventTime) TimestampValue() (pgtype.Timestamp, error) {
	return pgtype.Timestamp{Time: time.Unix(0, int64(t)).UTC(), Valid: true}, nil
}
