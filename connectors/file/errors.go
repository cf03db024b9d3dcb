package file

import "errors"

var (
	// ErrUnknownFormat reports a format name that is neither a preset nor
	// a syntax.
	ErrUnknownFormat = errors.New("file: unknown format")
	// ErrInvalidFormat reports a Format that cannot be used, such as a
	// decimal comma with a comma separator.
	ErrInvalidFormat = errors.New("file: invalid format")
	// ErrTooFewFields reports a delimited record without the columns that
	// the mapping names.
	ErrTooFewFields = errors.New("file: too few fields")
	// ErrTooManyFields reports a delimited record with more columns than
	// the header, or than the first record of a file without a header:
	// a shifted or broken row, not one to trim silently.
	ErrTooManyFields = errors.New("file: too many fields")
	// ErrBadTime reports a timestamp that does not parse.
	ErrBadTime = errors.New("file: bad timestamp")
	// ErrBadValue reports a field value that does not parse as its type.
	ErrBadValue = errors.New("file: bad value")
	// ErrQuote reports a quoted field without its closing quote, or with
	// text after it.
	ErrQuote = errors.New("file: misplaced quote")
	// ErrUnknownColumn reports a column name that the header lacks.
	ErrUnknownColumn = errors.New("file: unknown column")
)
