package frame

import (
	"strconv"
	"strings"

	"github.com/groundgate/groundgate/errkind"
)

// Sentinel errors. Load returns them wrapped in a *ParseError that says
// where the problem is; New returns them wrapped with fmt.Errorf. Test with
// errors.Is.
var (
	// ErrEmpty is returned when the input has no header line (it is empty
	// or holds only blank lines).
	ErrEmpty = errkind.New(errkind.Invalid, "empty input: no header line")

	// ErrNoRows is returned when the input has a header but no data rows.
	ErrNoRows = errkind.New(errkind.Invalid, "no data rows")

	// ErrNoColumns is returned when the header names a date column but no
	// data column.
	ErrNoColumns = errkind.New(errkind.Invalid, "header has no data columns")

	// ErrTooManyColumns is returned when the header has more than
	// MaxColumns data columns.
	ErrTooManyColumns = errkind.New(errkind.TooLarge, "too many columns")

	// ErrColumnName is returned for a data column whose header name is
	// empty.
	ErrColumnName = errkind.New(errkind.Invalid, "empty or overlong column name")

	// ErrDuplicateColumn is returned when two data columns have the same
	// name.
	ErrDuplicateColumn = errkind.New(errkind.Invalid, "duplicate column name")

	// ErrDelimiter is returned when the header line contains both ',' and
	// ';' outside quotes, so the delimiter cannot be told.
	ErrDelimiter = errkind.New(errkind.Invalid, "ambiguous delimiter: header has both ',' and ';'")

	// ErrLineTooLong is returned for a line longer than MaxLineBytes.
	ErrLineTooLong = errkind.New(errkind.TooLarge, "line too long")

	// ErrQuote is returned for a malformed quoted field: an unterminated
	// quote, a quote inside an unquoted field, or text after a closing
	// quote.
	ErrQuote = errkind.New(errkind.Invalid, "malformed quoted field")

	// ErrRagged is returned for a row whose number of fields differs from
	// the header's.
	ErrRagged = errkind.New(errkind.Invalid, "ragged row")

	// ErrDate is returned for a date cell that is neither an ISO date
	// (2006-01-02) nor a US date (1/2/2006), or not a calendar day.
	ErrDate = errkind.New(errkind.Invalid, "invalid date")

	// ErrDuplicateDate is returned when a date repeats the previous row's.
	ErrDuplicateDate = errkind.New(errkind.Invalid, "duplicate date")

	// ErrUnsorted is returned when a date is earlier than the previous
	// row's.
	ErrUnsorted = errkind.New(errkind.Invalid, "dates not sorted")

	// ErrNumber is returned for a data cell that is neither an NA token nor
	// a finite decimal number.
	ErrNumber = errkind.New(errkind.Invalid, "non-numeric cell")

	// ErrShape is returned by New when names, columns and dates do not have
	// matching lengths.
	ErrShape = errkind.New(errkind.Invalid, "columns do not match the date index")

	// ErrNoColumn is returned by Select for a name the frame does not have.
	ErrNoColumn = errkind.New(errkind.Invalid, "no such column")
)

// ParseError says where in a CSV input Load failed. Err is one of the
// sentinels above; errors.Is sees through a *ParseError to it.
type ParseError struct {
	File   string // the name given to Load (a path for LoadFile)
	Line   int    // 1-based physical line number; 0 when not tied to a line
	Column int    // 1-based field number (the date is column 1); 0 when not tied to a column
	Name   string // header name of Column, when known
	Detail string // extra context, such as the offending cell
	Err    error  // the sentinel
}

// Error formats the error as "FILE: line L, column C "NAME": ERR: DETAIL".
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(": line ")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Column > 0 {
		b.WriteString(", column ")
		b.WriteString(strconv.Itoa(e.Column))
		b.WriteString(" ")
		b.WriteString(strconv.Quote(e.Name))
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the sentinel.
func (e *ParseError) Unwrap() error { return e.Err }
