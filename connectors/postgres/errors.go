package postgres

import "errors"

// ErrInvalidConfig is wrapped by every error of a Config.
var ErrInvalidConfig = errors.New("postgres: invalid config")

// ErrColumn is wrapped by the error of a particle that the table cannot
// take: a key that names no usable column, or a value whose kind does not
// match its column's type. It comes wrapped with operation.ErrRejected.
var ErrColumn = errors.New("postgres: particle does not fit the table")

// ErrNoTimeNS reports a table without the time_ns column that keys the
// rows: one made by hand without it, or by a version that keyed rows on
// (series, time). The package documentation says how to add it.
var ErrNoTimeNS = errors.New("postgres: table has no time_ns column")

// ErrNoSchema is wrapped by Check's error when the table's schema does
// not exist, or an unqualified table has none on the search_path.
var ErrNoSchema = errors.New("postgres: no schema")

// ErrPrivilege is wrapped by Check's error when the role lacks a
// privilege the sink needs, naming the GRANT that gives it.
var ErrPrivilege = errors.New("postgres: privilege missing")

// ErrTable is wrapped by Check's error when the table is one the sink
// cannot write: not a table, a column of a type it does not write, a
// NOT NULL column it would leave empty, no unique index on (series,
// time_ns).
var ErrTable = errors.New("postgres: table unusable")
