// Package gateway is groundgate's side of other people's MCP servers
// ("upstreams", SPEC §14): their configuration, the connection to each,
// their live tools, the registry entries those tools become, drift
// between the two, and the calls forwarded to them.
//
// # Upstreams
//
// A Config (the body of PUT /v1/upstreams/{name}) names a stdio upstream
// (an argv, never a shell; env; a working directory) or a streamable
// HTTP one (a URL; headers). DecodeConfig reads it with the project's
// strict codec and validates it; Redacted, String, GoString and LogValue
// never show env or header values.
//
// An Upstream keeps one connection up with the official MCP Go SDK:
// initialize, list the tools (every page, within Limits), follow
// notifications/tools/list_changed, and reconnect with exponential
// backoff whenever the session ends (a stdio process that exits is
// started again). Status is a snapshot of it.
//
// # Bytes from upstreams
//
// Every message an upstream sends passes a tap (frames.go) before the
// SDK decodes it: a message over Limits.MaxMessageBytes is refused
// unread, malformed JSON-RPC is refused, and the raw results the gateway
// waits for (tool list pages, call results) are kept, so that tool
// definitions, schemas and results are decoded by package hashing's
// strict codec and hashed in RFC 8785 form as the upstream wrote them.
//
// # Tools and entries
//
// ToolEntry turns a LiveTool into a registry entry of kind tool: sem
// (effect read exactly when annotated read-only, destructive, idempotent,
// open_world, with MCP's defaults), alg (the schemas), impl (upstream,
// tool, and the server when pinned by version), disc (title,
// description). Its identity is SPEC §2's formula over the three
// behavioural layers, so a new description is never drift. Compare sets
// live tools against the entries in force: ok, new, drift, removed, and
// whether the description changed.
//
// # Calls
//
// Upstream.Call forwards one call within a time limit, a per-upstream
// concurrency limit and a result size limit; its errors are the kinds in
// errors.go, each with the status the REST layer gives it.
//
// This package is the foundation: it is not yet wired to REST, the CLI,
// the gate or the store.
package gateway
