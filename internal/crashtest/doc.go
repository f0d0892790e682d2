// Package crashtest holds the crash-and-load test: it builds the real
// groundgate binary, serves one bbolt file across many rounds, kills the
// server with SIGKILL at a seeded random point during concurrent registry
// writes, discover → ground → execute cycles and calls through the gateway
// (POST /v1/calls to cmd/mcp-testupstream over stdio: exempt reads of echo
// and discovered writes of put_item), and checks after every restart that
// each write the server acknowledged (a 2xx answer the client read in
// full) is still there, intact; executions must also replay, and each
// call's footprint must be served by GET /v1/calls/{hash} as answered.
//
// The package has no code of its own; the test is in crash_test.go, the
// load in load_test.go and calls_test.go, the bookkeeping of acknowledged
// writes in ledger_test.go and the checks in check_test.go. It runs with
// the ordinary `go test ./...`; two environment variables change it:
//
//	GROUNDGATE_CRASH_ROUNDS=N   rounds to run (default 20, the CI size)
//	GROUNDGATE_CRASH_SEED=S     the seed to replay (every run logs its seed)
//
// The seed fixes the kill delays, the entries written and the grids run;
// which requests are in flight at the kill still depends on timing, so a
// replay reproduces the schedule, not the exact interleaving.
package crashtest
