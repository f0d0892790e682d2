package upstreamtest

import "errors"

var (
	// ErrConfig is returned by New for a Config it cannot serve: a tool
	// name MCP does not allow, two behaviours on one tool, a name served
	// twice, an unreadable ToolBench file.
	ErrConfig = errors.New("upstreamtest: config")

	// ErrState is returned by Apply and Reload for a change they cannot
	// make (nothing is applied then): a state file that is not strict JSON
	// of State's shape, an input schema without "type": "object", a removal
	// of a tool that is not served.
	ErrState = errors.New("upstreamtest: state")

	// ErrCrashed is returned by ServeStdio when the session ended because
	// a call to Config.CrashOn crashed the upstream on purpose.
	ErrCrashed = errors.New("upstreamtest: crashed on purpose")
)
