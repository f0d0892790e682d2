package smt

import "github.com/groundgate/groundgate/errkind"

var (
	// ErrNotInstalled: the solver's executable is not on this machine.
	ErrNotInstalled = errkind.New(errkind.Unavailable, "smt: solver not installed")
	// ErrBadQuery: the query text is malformed or uses a command other than
	// declare-const, declare-fun, define-fun, define-sort and assert, or the
	// solver rejected it (unknown symbol, ill-sorted term).
	ErrBadQuery = errkind.New(errkind.Invalid, "smt: bad query")
	// ErrTimeout: the query ran out of time; the solver said so or was killed.
	ErrTimeout = errkind.New(errkind.Unavailable, "smt: solver timeout")
	// ErrSolver: the solver crashed, exited or answered something unreadable;
	// its process was killed and will be restarted by the next query.
	ErrSolver = errkind.New(errkind.Unavailable, "smt: solver failure")
	// ErrClosed: the pool was closed.
	ErrClosed = errkind.New(errkind.Unavailable, "smt: pool closed")
)
