package upstreamtest

import "github.com/groundgate/groundgate/errkind"

var (
	// ErrConfig is returned by New for a Config it cannot serve: a tool
	// name MCP does not allow, two behaviours on one tool, a name served
	// twice, an unreadable ToolBench file.
	ErrConfig = errkind.New(errkind.Invalid, "upstreamtest: config")

	// ErrState is returned by Apply and Reload for a change they cannot
	// make (nothing is applied then): a state file that is not strict JSON
	// of State's shape, an input schema without "type": "object", a removal
	// of a tool that is not served.
	ErrState = errkind.New(errkind.Invalid, "upstreamtest: state")

	// ErrCrashed is returned by ServeStdio when the session ended because
	// a call to Config.CrashOn crashed the upstream on purpose.
	ErrCrashed = errkind.New(errkind.Unavailable, "upstreamtest: crashed on purpose")
)
