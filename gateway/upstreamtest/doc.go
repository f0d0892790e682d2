// Package upstreamtest is an MCP server built to be an upstream in tests of
// the gateway (SPEC §14): the official Go SDK's server with a normal set of
// tools, plus, on demand, what no real server does when asked: change a
// tool after approval (a rug pull), hang, crash mid-call, answer 50 MB,
// answer bytes that are not JSON-RPC, list 10,000 tools, carry a poisoned
// description or a schema whose $ref loops. It also serves the
// StableToolBench APIs as the tools of one upstream.
//
// cmd/mcp-testupstream is this package as a process (stdio, or streamable
// HTTP with --http).
//
// # In tests
//
// In-process: StartHTTP serves a Config on a loopback port (its URL ends
// in /mcp), StartStdio over pipes; New, ServeStdio and Handler serve it
// any other way. As a process: Build (or BuildTo, from TestMain) builds
// the command, Command runs it over stdio as the SDK's CommandTransport,
// StartCommandHTTP runs it with --http and reads its URL. Everything
// started is stopped, and every process killed and waited for, when the
// test ends. Connect, ListAll, Call, Text, ListChanged and
// WaitListChanged are the SDK's client with a test's failures; ListToolsRaw
// and ListToolsBytes give the tools/list bytes as sent.
//
// # Tools
//
// With neither Config.Tools nor Config.ToolBench, the normal set:
//
//   - echo: read-only; {"text": string} → the text.
//   - get_item: read-only; {"id": string} → structuredContent
//     {"id", "found", "value"} under an outputSchema, and the same JSON as
//     text.
//   - put_item: a write (not destructive, idempotent); {"id": string,
//     "value": string, "ttl": integer ≥ 0}, id and value required, no other
//     member (a JSON Schema 2020-12 with "$schema").
//   - delete_all: a destructive write; {} → how many items it deleted.
//
// Config.Tools = N serves N synthetic read-only tools instead, tool_1 …
// tool_N with the number zero-padded so that names sort as numbers, each
// answering with its arguments. Config.ToolBench = DIR serves the APIs of
// DIR/stabletoolbench-tools.json instead: one tool per API, named by its
// `name`, titled "tool: api", described by its own description, with its
// `parameters` as the input schema (the source's loose types mapped to
// JSON Schema: enum, date, time and binary are strings, a date with
// "format": "date"); a call answers {"api": NAME, "arguments": ARGS}.
// Both may be given; they cannot serve a name twice.
//
// # Behaviours
//
// Each names a tool. A name the set above serves changes that tool; any
// other name adds a tool of that name (input schema {"type": "object"}).
//
//   - Hang: the tool never answers; its handler returns when the call is
//     cancelled (notifications/cancelled) or the session ends.
//   - CrashOn: mid-call, the server dies: Config.Crash runs (the command
//     sets os.Exit(3)); in-process, without it, every transport of the
//     Upstream is closed and later HTTP requests are aborted.
//   - Garbage: the call is answered with bytes that are not JSON-RPC, by
//     the transport, before the SDK sees the request: on stdio one line
//     `{"jsonrpc":"2.0","id":ID,"result":{"content":[` followed by a NUL
//     and text; over HTTP a 200 application/json response with that body.
//   - Poison: the tool's description addresses the agent (PoisonText);
//     an added one describes itself as a weather lookup first.
//
// BigResult = BYTES adds big_result, answering one text content of exactly
// BYTES ASCII bytes. RefLoop adds ref_loop, whose input schema is RefLoopSchema
// served byte for byte: {"type": "object", "$defs": {"a": {"$ref":
// "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}. The SDK
// refuses (panics on) an input schema without "type": "object" at the top,
// so the loop carries that member too; otherwise it serves any JSON given as
// json.RawMessage through the low-level Server.AddTool, which neither
// validates the schema nor the arguments. No tool here validates its
// arguments against its schema except by decoding them strictly.
//
// # Rug pulls: the state file
//
// Config.State names a JSON file that changes the tools after a client has
// seen them, without a restart. Reload reads it (the command on SIGHUP, and
// every --state-poll when its bytes change; Watch polls in-process), Apply
// takes the same change as a value. A missing or empty file is no change.
// The state is relative to the tools the flags make, not to the previous
// state: applying the same file twice changes nothing, applying {} undoes
// every change.
//
//	{
//	  "tools": {
//	    "put_item": {"description": "…"},
//	    "echo": {"annotations": {"readOnlyHint": false, "destructiveHint": true}},
//	    "get_item": {"inputSchema": {"type": "object"}, "outputSchema": null},
//	    "new_tool": {"description": "added after approval"}
//	  },
//	  "remove": ["delete_all"]
//	}
//
// A patch replaces what it names: title, description, inputSchema,
// outputSchema (null removes it), annotations (the whole object: title,
// readOnlyHint, destructiveHint, idempotentHint, openWorldHint). A name the
// flags do not serve is added (input schema {"type": "object"} unless
// given) and answers with its arguments. Every tool whose definition
// changed is re-added to the SDK's server, which sends
// notifications/tools/list_changed to every session (within 10 ms; to a
// session of protocol 2026-07-28 only when it listens for it, as the SDK's
// client does when it has a ToolListChangedHandler). The file is decoded
// strictly (hashing.DecodeStrict); write it whole (write a temporary file
// and rename it) so a poll never reads half of it.
//
// # Determinism
//
// The same Config gives the same tools/list bytes: tools are listed sorted
// by name, schemas are fixed bytes, and nothing depends on the clock.
package upstreamtest
