package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sensorstorm/sensorstorm/operation"
)

// typeTimestamptz is how format_type names the time column's type.
const typeTimestamptz colType = "timestamp with time zone"

// fixedTypes are the types of the columns every table has; epoch may be
// missing (the sink adds it), the others may not.
var fixedTypes = map[string]colType{
	colTime: typeTimestamptz, colTimeNS: typeBigint, colSeries: typeText, colMeasurement: typeText, colEpoch: typeBigint,
}

// Checked is what Check found of a sink's table.
type Checked struct {
	// Database, Schema and Table name the table.
	Database, Schema, Table string
	// Exists says that the table exists; when it does not, the role may
	// create it.
	Exists bool
	// Owner says that the role owns the table, so that the sink may add
	// a column for a tag or field key it does not have yet.
	Owner bool
}

// String describes c in a few words, such as
// "table metrics.readings (insert allowed)".
func (c Checked) String() string {
	name := c.Schema + "." + c.Table
	switch {
	case !c.Exists:
		return "table " + name + " missing (the role may create it)"
	case !c.Owner:
		return "table " + name + " (insert allowed; the role does not own it: a key without a column stops the run)"
	}
	return "table " + name + " (insert allowed)"
}

// CheckError is the error of Check: what failed, naming the table as far
// as Check got. It wraps operation.ErrRefused when retrying cannot help,
// as the Sink's errors do, and operation.ErrDestination otherwise.
type CheckError struct {
	// Database, Schema and Table name the table; Schema is empty when
	// Check failed before it knew an unqualified table's schema.
	Database, Schema, Table string
	// Refused says that retrying cannot help.
	Refused bool
	// Err is what failed.
	Err error
}

// Error implements error.
func (e *CheckError) Error() string {
	name := e.Table
	if e.Schema != "" {
		name = e.Schema + "." + e.Table
	}
	return fmt.Sprintf("postgres: database %q, table %s: %v", e.Database, name, e.Err)
}

// Unwrap returns Err and operation.ErrRefused, or Err and
// operation.ErrDestination.
func (e *CheckError) Unwrap() []error {
	if e.Refused {
		return []error{e.Err, operation.ErrRefused}
	}
	return []error{e.Err, operation.ErrDestination}
}

// Check checks, without writing anything, what a Sink with cfg needs of
// the database and retrying cannot fix: it connects, the table's schema
// exists, the table exists with columns the sink can write (or the role
// may create it), and the role may insert into it, and select and update
// its rows (a point delivered again is merged). It returns what it found,
// or a *CheckError whose Err wraps operation.ErrRefused when retrying
// cannot help, as the Sink's errors do, operation.ErrDestination when the
// server may come back, or ErrNoSchema, ErrPrivilege, ErrTable or
// ErrNoTimeNS to tell which check failed. A config that cannot work is
// reported as by Validate. cfg.WriteTimeout bounds the whole check.
func Check(ctx context.Context, cfg Config) (Checked, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return Checked{}, err
	}
	pcfg, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		return Checked{}, fmt.Errorf("%w: url: %w", ErrInvalidConfig, err)
	}
	parts, _ := tableName(cfg.Table)
	c := Checked{Database: pcfg.Database, Table: parts[len(parts)-1]}
	if len(parts) == 2 {
		c.Schema = parts[0]
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.WriteTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, pcfg)
	if err != nil {
		return c, c.fail(fmt.Errorf("connect: %w", err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := c.check(ctx, conn); err != nil {
		return c, c.fail(err)
	}
	return c, nil
}

// fail returns err as a *CheckError, refused as the Sink's would be.
func (c *Checked) fail(err error) error {
	return &CheckError{Database: c.Database, Schema: c.Schema, Table: c.Table, Refused: refused(err), Err: err}
}

// check makes Check's checks on conn, filling c in.
func (c *Checked) check(ctx context.Context, conn *pgx.Conn) error {
	var user string
	var current pgtype.Text
	if err := conn.QueryRow(ctx, `SELECT current_database(), current_user, current_schema()`).Scan(&c.Database, &user, &current); err != nil {
		return err
	}
	if c.Schema == "" {
		if !current.Valid {
			return fmt.Errorf("%w: no schema of the search_path exists to hold the table: name one in table, as schema.%s", ErrNoSchema, c.Table)
		}
		c.Schema = current.String
	}
	schema, name := quote(c.Schema), c.Schema+"."+c.Table
	var usage, create bool
	err := conn.QueryRow(ctx, `SELECT has_schema_privilege(oid, 'USAGE'), has_schema_privilege(oid, 'CREATE') FROM pg_namespace WHERE nspname = $1`, c.Schema).Scan(&usage, &create)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: schema %s does not exist: create it (CREATE SCHEMA %s) or name another in table", ErrNoSchema, c.Schema, schema)
	case err != nil:
		return err
	case !usage:
		return fmt.Errorf("%w: role %s has no USAGE on schema %s (GRANT USAGE ON SCHEMA %s TO %s)", ErrPrivilege, user, c.Schema, schema, quote(user))
	}
	table := pgx.Identifier{c.Schema, c.Table}.Sanitize()
	var (
		oid                            uint32
		kind                           string
		insert, selects, update, owner bool
	)
	err = conn.QueryRow(ctx, `SELECT c.oid, c.relkind::text, has_table_privilege(c.oid, 'INSERT'), has_table_privilege(c.oid, 'SELECT'),
		has_table_privilege(c.oid, 'UPDATE'), pg_has_role(c.relowner, 'USAGE')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`, c.Schema, c.Table).
		Scan(&oid, &kind, &insert, &selects, &update, &owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if !create {
			return fmt.Errorf("%w: the table does not exist and role %s may not create it: no CREATE on schema %s (GRANT CREATE ON SCHEMA %s TO %s, or create the table)", ErrPrivilege, user, c.Schema, schema, quote(user))
		}
		return nil
	case err != nil:
		return err
	case kind != "r" && kind != "p":
		return fmt.Errorf("%w: %s is not a table (pg_class.relkind %q)", ErrTable, name, kind)
	}
	c.Exists, c.Owner = true, owner
	var missing []string
	for _, p := range []struct {
		name string
		ok   bool
	}{{"INSERT", insert}, {"SELECT", selects}, {"UPDATE", update}} {
		if !p.ok {
			missing = append(missing, p.name)
		}
	}
	if missing != nil {
		return fmt.Errorf("%w: role %s may not %s on %s; the sink inserts rows, and selects and updates them to merge a point delivered again (GRANT INSERT, SELECT, UPDATE ON %s TO %s)",
			ErrPrivilege, user, strings.Join(missing, ", "), name, table, quote(user))
	}
	return checkColumns(ctx, conn, oid, name, owner)
}

// checkColumns checks that the columns of the table name with oid are
// ones the sink can write, and that it has the unique index the sink
// merges rows on.
func checkColumns(ctx context.Context, conn *pgx.Conn, oid uint32, name string, owner bool) error {
	table := pgx.Identifier(strings.SplitN(name, ".", 2)).Sanitize()
	rows, err := conn.Query(ctx, `SELECT attname, format_type(atttypid, NULL), attnotnull, atthasdef FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, oid)
	if err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	var (
		col, typ            string
		notNull, hasDefault bool
		bad                 []string
	)
	found := map[string]bool{}
	if _, err := pgx.ForEachRow(rows, []any{&col, &typ, &notNull, &hasDefault}, func() error {
		found[col] = true
		if want, ok := fixedTypes[col]; ok {
			if colType(typ) != want {
				bad = append(bad, fmt.Sprintf("%s has type %s, the sink writes %s", col, typ, want))
			}
			return nil
		}
		// A column with a default is the table's own (created_at, say):
		// the sink leaves it alone unless a particle has its key.
		switch {
		case hasDefault:
		case notNull:
			bad = append(bad, fmt.Sprintf("%s is NOT NULL without a default, and rows without that key would be refused", col))
		case !slices.Contains([]colType{typeText, typeFloat, typeBigint, typeBool}, colType(typ)):
			bad = append(bad, fmt.Sprintf("%s has type %s, the sink writes text, double precision, bigint or boolean", col, typ))
		}
		return nil
	}); err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	if !found[colTimeNS] {
		return fmt.Errorf("%w (see the package documentation to add it)", ErrNoTimeNS)
	}
	for _, fixed := range []string{colTime, colSeries, colMeasurement} {
		if !found[fixed] {
			bad = append(bad, "no column "+fixed)
		}
	}
	if bad != nil {
		slices.Sort(bad)
		return fmt.Errorf("%w: %s", ErrTable, strings.Join(bad, "; "))
	}
	if !found[colEpoch] && !owner {
		return fmt.Errorf("%w: %s has no epoch column and only its owner may add it (ALTER TABLE %s ADD COLUMN epoch bigint)", ErrPrivilege, name, table)
	}
	var keyed bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_index i WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND
		ARRAY(SELECT a.attname::text FROM unnest((i.indkey::int2[])[0:i.indnkeyatts-1]) k JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k ORDER BY 1) = ARRAY['series', 'time_ns'])`, oid).Scan(&keyed)
	switch {
	case err != nil:
		return fmt.Errorf("read indexes: %w", err)
	case !keyed:
		return fmt.Errorf("%w: no unique index on (series, time_ns), which the sink merges rows on (ALTER TABLE %s ADD PRIMARY KEY (series, time_ns))", ErrTable, table)
	}
	return nil
}
