// Package execution runs grounded requests and keeps the footprints an
// auditor replays and diffs.
//
// Execute takes a *ground.Grounded — the only input it accepts; a bare
// request never runs — and:
//
//  1. waits for an execution slot (ErrBusy when too many are in flight);
//  2. resolves the family and the metric by name and kind in the registry
//     version the grounding was decided against (never the current one: a
//     grounding id determines its execution), checking that version's hash
//     against the one the grounding recorded (ErrDrift when they do not
//     resolve, ErrNotRunnable when the engine cannot run the metric),
//     reads the data file from the data root (see Data) and parses it
//     (ErrBadData, nothing stored, when it is malformed);
//  3. expands the request into morphisms, hashes each, compiles each into a
//     plan, applies the risk filter, and refuses the whole grid with
//     ErrOverBudget (nothing stored) when its work or held memory is over
//     the budget;
//  4. runs the admissible morphisms on a worker pool, storing each one's
//     artifacts as it finishes, then scores them over the common
//     evaluation window and selects the best;
//  5. stores the footprint last, once every blob it names is durable. A
//     run that fails part-way leaves only unreferenced, content-addressed
//     blobs behind, never a footprint without its blobs.
//
// # Morphisms
//
// The grid's axes are the family's declared parameters in schema order
// (alg.params), then any parameter the request gives that the family does
// not declare (refused by the gate with F1; rejected here by "schema"),
// sorted by name. The Cartesian product runs first axis slowest, each axis
// in the order its values were listed. A declared parameter the request
// leaves out is bound to its default, so every morphism's params are
// complete. A morphism's hash is SHA-256 of the JCS of
//
//	{"expr": canonical family expression, "params": bound params, "registry": registry hash}
//
// — not the metric, not the data.
//
// # Plans
//
// The family's impl.expr is an s-expression over engine kernels, its
// input x (the data frame) and its parameters $name. The planner compiles
// it per morphism into a DAG of kernel nodes in evaluation order, with
// every parameter bound, constants folded and common subexpressions shared
// ((dlog x) used twice is one node). A symbol resolves in the registry
// version the execution runs against:
//
//   - an operation or signal whose expression is its own name applied to
//     its inputs and parameters ("(dlog x)", "(wzs x $window)",
//     "(col x $name)", "(const $value)") is a primitive, run by the engine
//     kernel of that name; the node records the entry's identity;
//   - an operation or signal with any other expression is expanded inline
//     (inputs x, y bound to its first arguments, parameters in schema
//     order to the rest, defaults for the ones left out), recursively, at
//     most 16 deep; its identity joins the plan's capabilities;
//   - volsize is an engine built-in with no registry entry. The planner
//     splits (volsize sig r w_r τ L lag) into trailing_vol(r, w_r) — σ̂,
//     shared by every morphism with the same returns and risk window — and
//     volsize(sig, r, σ̂, τ, L, lag);
//   - metric kernels (srp, mdd, …) are engine built-ins too, reached
//     through the metric's expression "(k p)"; they are outside the plan.
//
// The plan holds the engine, the family, the nodes (op, registry identity,
// arguments), the output node, the capabilities it used (sorted by name)
// and its built-ins. Its digest is SHA-256 of its canonical JSON. It holds
// nothing about the metric or the data content.
//
// Columns: x is every column of the data file (every data column is
// numeric: the loader refuses anything else), and the portfolio P&L is the
// mean across them of the assets' defined P&Ls. CARRY reads its front and
// next columns by name through col and trades the front one.
//
// # Risk predicates
//
// A morphism is admissible when every predicate holds; otherwise
// "rejected" lists the failing ones in this order and "reasons" says why:
//
//   - resolves: the expression parses, every symbol resolves (above), the
//     arguments have the right count and types, every $parameter is bound,
//     the result is a P&L. A morphism failing it has no plan.
//   - data: the source exists inside the data root (see Data), and every
//     column the plan reads by name is in it.
//   - non_negative: every numeric parameter is ≥ 0.
//   - leverage: the estimated leverage — the cap L of the plan's volsize,
//     a bound on each asset's |weight| and so on the portfolio's gross
//     exposure (the mean of the assets) — is ≤ Options.MaxLeverage.
//   - schema: every parameter is declared by the family, has its declared
//     type (int: an integral number), and is bound (required ones have no
//     default).
//   - bounds: every numeric parameter is within its schema min and max.
//   - domain: every kernel argument is in the kernel's domain: windows ≥ 2
//     (rmean ≥ 1, shift/diff ≥ 0) and integral, τ and L finite and > 0,
//     lag ≥ 1, clip lo ≤ hi, no constant that folds to NaN or ±Inf, no
//     subtraction/division/comparison of a series with itself (the result
//     is constant: CARRY with front = next). A kernel error while running
//     (none is expected after these checks) is recorded as a domain
//     rejection too; a panic in a kernel is recovered the same way.
//
// leverage and domain are checked on the plan, so a morphism without one
// is not checked for them.
//
// # Layers
//
// The eight layer digests, in SPEC order:
//
//   - registry: the registry hash of the version the execution ran
//     against.
//   - request: SHA-256 of JCS(request) (ground.Request.Hash).
//   - morphisms: hashing.LayerList of every morphism hash, in grid order,
//     rejected ones included.
//   - plans: LayerList of the plan digest of every morphism that has a
//     plan (admissible or not), in grid order; a morphism whose expression
//     does not compile contributes nothing.
//   - artifacts: LayerList of the artifact digests of every morphism that
//     ran, in grid order, pnl then weights; a rejected morphism contributes
//     nothing (its null score and the morphisms layer keep the grid
//     aligned).
//   - score: SHA-256 of JCS of the list of scores in grid order, null for a
//     morphism that did not run or whose score is NA (NaN or ±Inf). JCS
//     writes numbers in ECMAScript's shortest round-trip form.
//   - selection: SHA-256 of the selected morphism's hash string, or of
//     "null" when nothing has a score.
//   - data: BLAKE3 of the source bytes as stored (a .gz file's compressed
//     bytes); BLAKE3 of no bytes when the source could not be read.
//
// The execution hash is SHA-256 over the eight digests, each followed by
// "\n" (Layers.Hash). No layer depends on map order, goroutine order, the
// number of workers, whether node values are shared, the clock, the
// grounding id or the registry version number (a discovery-only registry
// edit makes a new version with the same registry hash: same execution).
//
// # Data
//
// The data root is an fs.FS (the server's os.Root, or an embedded FS).
// request.data must be a relative slash-separated path with no empty, "."
// or ".." element and no backslash (fs.ValidPath); an os.Root also refuses
// links that leave the root. A path that breaks these rules, a file that
// does not exist, a link out of the root and a directory are not errors:
// every morphism fails "data", no data blob is stored, data.missing says
// why (a fixed phrase, never a host path), the data layer is BLAKE3 of no
// bytes, and the footprint is stored whole — a named rejection an auditor
// can see and replay. A file that exists but does not parse — ragged rows,
// duplicate or unsorted dates, a non-numeric cell, an empty file, a broken
// gzip stream, more than Options.MaxDataBytes — is ErrBadData naming the
// file, line and column, and nothing is stored. Negative prices are data
// (WTI settled at −36.98 on 2020-04-20): log returns are NA around them.
//
// # Artifacts
//
// Each morphism that ran leaves two artifacts, tables in the canonical
// binary encoding of package series, digested with BLAKE3: "pnl" (one
// column) and "weights" (one column per traded asset). The artifact store
// keeps pnl packed and weights as a recipe over the returns, volatility
// and signal panels the grid shares (derive.go), re-derived and re-hashed
// on every read.
//
// # Replay and diff
//
// Replay re-runs a footprint from its stored request, the data blob under
// its data digest (not the file at the path), the registry version it
// recorded and the risk bound it recorded, and compares every layer.
// Diff compares two footprints layer by layer: registry capabilities
// added, removed, changed or re-described between the two versions and
// whether the executions used them; request fields by JSON pointer;
// morphisms, plans, artifacts and scores by grid index; the selection; the
// data columns, date ranges and cells when both blobs are stored.
package execution
