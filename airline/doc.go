// Package airline is τ-bench's airline domain in Go: the world (users,
// reservations, flights; World, loaded from τ-bench's db files) and its
// 14 tools as methods over it, with exactly the semantics of τ-bench's
// Python tools (sierra-research/tau-bench 59a200c,
// shared/data/tau-airline/reference), and NewServer serving them over
// MCP (cmd/airline-mcp).
//
// # What is reproduced
//
// Every tool answers the string τ-bench's returns, byte for byte:
// json.dumps of the record (", " and ": ", members in the order Python's
// dicts hold them, non-ASCII escaped, ints as 50 and floats as 50.0),
// or its message, including its errors ("Error: user not found" for a
// reservation that is missing, as the original says). The writes change
// the world as τ-bench's do, quirks included: a booking takes no seats
// and is named HATHAT, HATHAU or HATHAV; update_reservation_flights keeps
// the reservation's cabin; bags may be lowered; cancellation refunds
// everything whatever the flights' status; search_onestop_flight prices
// the second leg on the first leg's date. The clock is τ-bench's fixed
// one (Now). World.Digest is oracle.json's digest of the database.
// TestOracle replays the 50 tasks' gold actions against oracle.json:
// 158/158 outputs and 50/50 final digests.
//
// # Where it differs
//
// Arguments are decoded strictly (package hashing): a member a tool does
// not declare, at any depth, is an error, and objects keep this
// package's member order (flight_number, date; first_name, last_name,
// dob; payment_id, amount) where Python would echo the caller's. A
// missing or unexpected top-level argument answers Python's own
// TypeError text ("Error: GetUserDetails.invoke() missing 1 required
// positional argument: 'user_id'"); a value of the wrong type answers
// "Error: arguments: …" where Python would fail later or not at all.
// calculate evaluates Python's arithmetic itself (ints beyond 64 bits
// become floats); send_certificate with all three certificate ids held
// answers "None" (τ-bench's tool returns None).
package airline
