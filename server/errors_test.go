package server

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/agent"
	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/discover/relevance"
	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/fuzz/runs"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/pgtest"
	"github.com/groundgate/groundgate/internal/s3test"
	"github.com/groundgate/groundgate/jobs"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/series"
	"github.com/groundgate/groundgate/session"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/pgstore"
	"github.com/groundgate/groundgate/store/s3store"
	"github.com/groundgate/groundgate/store/storecopy"
	"github.com/groundgate/groundgate/wordvec"
)

var updateSentinels = flag.Bool("update-sentinels", false, "rewrite testdata/sentinels.golden")

// sentinels is every exported sentinel error of the module, by package
// directory. TestSentinelsListed keeps it complete.
var sentinels = []struct {
	name string
	err  error
}{
	{"agent.ErrNoExecutor", agent.ErrNoExecutor},
	{"agent.ErrPrompts", agent.ErrPrompts},
	{"agent.ErrProposer", agent.ErrProposer},
	{"agent/llm.ErrFailed", llm.ErrFailed},
	{"artifacts.ErrCorrupt", artifacts.ErrCorrupt},
	{"artifacts.ErrNotFound", artifacts.ErrNotFound},
	{"attest.ErrBadSignature", attest.ErrBadSignature},
	{"attest.ErrFootprint", attest.ErrFootprint},
	{"attest.ErrKeyPermissions", attest.ErrKeyPermissions},
	{"attest.ErrKeyType", attest.ErrKeyType},
	{"attest.ErrNoKey", attest.ErrNoKey},
	{"attest.ErrNotAttestation", attest.ErrNotAttestation},
	{"attest.ErrTooLarge", attest.ErrTooLarge},
	{"calls.ErrCorrupt", calls.ErrCorrupt},
	{"calls.ErrNoSigner", calls.ErrNoSigner},
	{"calls.ErrNotFound", calls.ErrNotFound},
	{"calls.ErrNotReplayable", calls.ErrNotReplayable},
	{"contract.ErrNotScalar", contract.ErrNotScalar},
	{"discover.ErrBadQuery", discover.ErrBadQuery},
	{"discover.ErrCorrupt", discover.ErrCorrupt},
	{"discover.ErrNotFound", discover.ErrNotFound},
	{"discover.ErrStarting", discover.ErrStarting},
	{"discover/relevance.ErrNoName", relevance.ErrNoName},
	{"discover/relevance.ErrSnapshot", relevance.ErrSnapshot},
	{"execution.ErrBadData", execution.ErrBadData},
	{"execution.ErrBusy", execution.ErrBusy},
	{"execution.ErrCorrupt", execution.ErrCorrupt},
	{"execution.ErrDataChanged", execution.ErrDataChanged},
	{"execution.ErrDrift", execution.ErrDrift},
	{"execution.ErrNotFound", execution.ErrNotFound},
	{"execution.ErrNotGrounded", execution.ErrNotGrounded},
	{"execution.ErrNotRunnable", execution.ErrNotRunnable},
	{"execution.ErrOverBudget", execution.ErrOverBudget},
	{"execution/frame.ErrColumnName", frame.ErrColumnName},
	{"execution/frame.ErrDate", frame.ErrDate},
	{"execution/frame.ErrDelimiter", frame.ErrDelimiter},
	{"execution/frame.ErrDuplicateColumn", frame.ErrDuplicateColumn},
	{"execution/frame.ErrDuplicateDate", frame.ErrDuplicateDate},
	{"execution/frame.ErrEmpty", frame.ErrEmpty},
	{"execution/frame.ErrLineTooLong", frame.ErrLineTooLong},
	{"execution/frame.ErrNoColumn", frame.ErrNoColumn},
	{"execution/frame.ErrNoColumns", frame.ErrNoColumns},
	{"execution/frame.ErrNoRows", frame.ErrNoRows},
	{"execution/frame.ErrNumber", frame.ErrNumber},
	{"execution/frame.ErrQuote", frame.ErrQuote},
	{"execution/frame.ErrRagged", frame.ErrRagged},
	{"execution/frame.ErrShape", frame.ErrShape},
	{"execution/frame.ErrTooManyColumns", frame.ErrTooManyColumns},
	{"execution/frame.ErrUnsorted", frame.ErrUnsorted},
	{"execution/kernel.ErrColumn", kernel.ErrColumn},
	{"execution/kernel.ErrLength", kernel.ErrLength},
	{"execution/kernel.ErrParam", kernel.ErrParam},
	{"execution/kernel.ErrUnknown", kernel.ErrUnknown},
	{"fuzz.ErrPoisoned", fuzz.ErrPoisoned},
	{"internal/pgtest.ErrNotInstalled", pgtest.ErrNotInstalled},
	{"internal/s3test.ErrNotInstalled", s3test.ErrNotInstalled},
	{"fuzz/runs.ErrClosed", runs.ErrClosed},
	{"fuzz/runs.ErrCorrupt", runs.ErrCorrupt},
	{"fuzz/runs.ErrInvalid", runs.ErrInvalid},
	{"fuzz/runs.ErrNotFound", runs.ErrNotFound},
	{"fuzz/runs.ErrNotQueued", runs.ErrNotQueued},
	{"fuzz/runs.ErrRunning", runs.ErrRunning},
	{"gateway.ErrBusy", gateway.ErrBusy},
	{"gateway.ErrCallRejected", gateway.ErrCallRejected},
	{"gateway.ErrClosed", gateway.ErrClosed},
	{"gateway.ErrInvalidConfig", gateway.ErrInvalidConfig},
	{"gateway.ErrInvalidOverlay", gateway.ErrInvalidOverlay},
	{"gateway.ErrInvalidSchema", gateway.ErrInvalidSchema},
	{"gateway.ErrInvalidTool", gateway.ErrInvalidTool},
	{"gateway.ErrNoUpstream", gateway.ErrNoUpstream},
	{"gateway.ErrProtocol", gateway.ErrProtocol},
	{"gateway.ErrResultTooLarge", gateway.ErrResultTooLarge},
	{"gateway.ErrTimeout", gateway.ErrTimeout},
	{"gateway.ErrToolList", gateway.ErrToolList},
	{"gateway.ErrUnavailable", gateway.ErrUnavailable},
	{"gateway/upstreamtest.ErrConfig", upstreamtest.ErrConfig},
	{"gateway/upstreamtest.ErrCrashed", upstreamtest.ErrCrashed},
	{"gateway/upstreamtest.ErrState", upstreamtest.ErrState},
	{"ground.ErrCorrupt", ground.ErrCorrupt},
	{"ground.ErrNoAdvisor", ground.ErrNoAdvisor},
	{"ground.ErrNoData", ground.ErrNoData},
	{"ground.ErrNotAdmitted", ground.ErrNotAdmitted},
	{"ground.ErrNotFound", ground.ErrNotFound},
	{"ground.ErrPolicyRefused", ground.ErrPolicyRefused},
	{"hashing.ErrMalformed", hashing.ErrMalformed},
	{"jobs.ErrClosed", jobs.ErrClosed},
	{"jobs.ErrInvalidJob", jobs.ErrInvalidJob},
	{"jobs.ErrLost", jobs.ErrLost},
	{"jobs.ErrNoWorker", jobs.ErrNoWorker},
	{"jobs.ErrNotTaken", jobs.ErrNotTaken},
	{"jobs.ErrStillRunning", jobs.ErrStillRunning},
	{"policy.ErrCorrupt", policy.ErrCorrupt},
	{"policy.ErrInvalid", policy.ErrInvalid},
	{"policy.ErrNoSolver", policy.ErrNoSolver},
	{"policy.ErrNotFound", policy.ErrNotFound},
	{"policy.ErrSolver", policy.ErrSolver},
	{"policy.ErrTooMany", policy.ErrTooMany},
	{"policy/smt.ErrBadQuery", smt.ErrBadQuery},
	{"policy/smt.ErrClosed", smt.ErrClosed},
	{"policy/smt.ErrNotInstalled", smt.ErrNotInstalled},
	{"policy/smt.ErrSolver", smt.ErrSolver},
	{"policy/smt.ErrTimeout", smt.ErrTimeout},
	{"registry.ErrClosed", registry.ErrClosed},
	{"registry.ErrCorrupt", registry.ErrCorrupt},
	{"registry.ErrDuplicateIdentity", registry.ErrDuplicateIdentity},
	{"registry.ErrInvalidEntry", registry.ErrInvalidEntry},
	{"registry.ErrNotFound", registry.ErrNotFound},
	{"registry.ErrStalePatch", registry.ErrStalePatch},
	{"series.ErrMalformed", series.ErrMalformed},
	{"session.ErrClosed", session.ErrClosed},
	{"session.ErrCorrupt", session.ErrCorrupt},
	{"session.ErrInvalid", session.ErrInvalid},
	{"session.ErrNotFound", session.ErrNotFound},
	{"session.ErrTooLarge", session.ErrTooLarge},
	{"session.ErrUnauthorized", session.ErrUnauthorized},
	{"store.ErrClosed", store.ErrClosed},
	{"store.ErrConflict", store.ErrConflict},
	{"store.ErrCorrupt", store.ErrCorrupt},
	{"store.ErrNotFound", store.ErrNotFound},
	{"store.ErrReadOnly", store.ErrReadOnly},
	{"store/pgstore.ErrConfig", pgstore.ErrConfig},
	{"store/pgstore.ErrContention", pgstore.ErrContention},
	{"store/pgstore.ErrSchema", pgstore.ErrSchema},
	{"store/s3store.ErrConfig", s3store.ErrConfig},
	{"store/storecopy.ErrConflict", storecopy.ErrConflict},
	{"store/storecopy.ErrMismatch", storecopy.ErrMismatch},
	{"store/storecopy.ErrNested", storecopy.ErrNested},
	{"wordvec.ErrCorrupt", wordvec.ErrCorrupt},
}

// TestSentinelsListed reads the module's source: every exported
// package-level Err… variable has a comment and is declared with errkind.New or
// errkind.Coded (it has a kind), or with fmt.Errorf wrapping another
// sentinel (a case of it, whose kind TestSentinelProblems checks), and is
// in the sentinels table above (so TestSentinelProblems pins what it is
// answered with).
func TestSentinelsListed(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil // commands export nothing
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !n.IsExported() || !strings.HasPrefix(n.Name, "Err") {
						continue
					}
					name := filepath.ToSlash(dir) + "." + n.Name
					found = append(found, name)
					if i >= len(vs.Values) || !isErrkindCall(vs.Values[i]) {
						t.Errorf("%s: %s is not declared with errkind.New or errkind.Coded", fset.Position(n.Pos()), name)
					}
					if vs.Doc == nil && (g.Doc == nil || len(g.Specs) > 1) {
						t.Errorf("%s: %s has no comment saying when it is returned", fset.Position(n.Pos()), name)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	var listed []string
	for _, s := range sentinels {
		listed = append(listed, s.name)
	}
	for _, n := range found {
		if !slices.Contains(listed, n) {
			t.Errorf("%s is not in the sentinels table of server/errors_test.go: add it (and run with -update-sentinels)", n)
		}
	}
	for _, n := range listed {
		if !slices.Contains(found, n) {
			t.Errorf("%s is listed but no longer declared", n)
		}
	}
}

func isErrkindCall(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	switch {
	case !ok:
		return false
	case pkg.Name == "fmt" && sel.Sel.Name == "Errorf" && len(c.Args) > 1:
		lit, ok := c.Args[0].(*ast.BasicLit)
		return ok && strings.Contains(lit.Value, "%w")
	}
	return pkg.Name == "errkind" && (sel.Sel.Name == "New" || sel.Sel.Name == "Coded")
}

// TestSentinelProblems pins, for every sentinel, its kind and code, the
// status and problem type the API answers it with (wrapped, as packages
// return them) and how MCP answers it: testdata/sentinels.golden. A
// sentinel without a kind fails.
func TestSentinelProblems(t *testing.T) {
	var b bytes.Buffer
	fmt.Fprintln(&b, "# sentinel\tkind\tcode\tstatus\tproblem type\tMCP")
	for _, s := range sentinels {
		k := errkind.Of(s.err)
		if k == errkind.Unknown {
			t.Errorf("%s has no kind", s.name)
		}
		st, p, _ := problemFor(context.Background(), fmt.Errorf("op: %w", s.err))
		if p.Status != st {
			t.Errorf("%s: status %d, problem's %d", s.name, st, p.Status)
		}
		code := errkind.CodeOf(s.err)
		if code == "" {
			code = "-"
		}
		mcp := "tool-error"
		if p.InvalidParams() {
			mcp = "invalid-params"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%d\t%s\t%s\n", s.name, k, code, st, strings.TrimPrefix(p.Type, problemPrefix), mcp)
	}
	golden := filepath.Join("testdata", "sentinels.golden")
	if *updateSentinels {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("sentinel problems differ from %s (run with -update-sentinels if intended):\n%s", golden, b.String())
	}
}
