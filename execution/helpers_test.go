package execution

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// realData is the directory of real daily series shared with the frame and
// kernel tests (see testdata/README.md for sources and licences).
const realData = "testdata"

// rig is a whole pipeline on a real bbolt file: registry seeded with the
// built-in catalog, discovery, the gate, the artifact store and the
// executor, with a data root opened as an os.Root.
type rig struct {
	dbPath  string
	dataDir string
	opt     Options
	store   *registry.Store
	disc    *discover.Discoverer
	gate    *ground.Gate
	arts    *artifacts.Store
	x       *Executor
	root    *os.Root
}

func newRig(t testing.TB, dataDir string, opt Options) *rig {
	t.Helper()
	r := &rig{dbPath: filepath.Join(t.TempDir(), "gg.db"), dataDir: dataDir, opt: opt}
	registrytest.Seeded(t, r.dbPath, registry.Options{}).Close() // r.open reopens it
	r.open(t)
	t.Cleanup(func() { r.close(t) })
	return r
}

// newRigSeededWith is newRig on a database seeded with the catalog in dir
// (a previous release's, say) instead of the built-in one.
func newRigSeededWith(t testing.TB, dataDir string, opt Options, dir string) *rig {
	t.Helper()
	ctx := context.Background()
	r := &rig{dbPath: filepath.Join(t.TempDir(), "gg.db"), dataDir: dataDir, opt: opt}
	cat, err := registry.LoadCatalog(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	s, err := registry.Open(ctx, r.dbPath, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seed(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r.open(t)
	t.Cleanup(func() { r.close(t) })
	return r
}

// open (re)opens everything on the rig's file, as a restarted server would.
func (r *rig) open(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	s, err := registry.Open(ctx, r.dbPath, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.store = s
	if r.disc, err = discover.New(ctx, s, s.Engine(), discover.Options{}); err != nil {
		t.Fatal(err)
	}
	if r.gate, err = ground.New(s, r.disc, s.Engine()); err != nil {
		t.Fatal(err)
	}
	if r.arts, err = OpenArtifacts(s.Engine()); err != nil {
		t.Fatal(err)
	}
	if r.root, err = os.OpenRoot(r.dataDir); err != nil {
		t.Fatal(err)
	}
	if r.x, err = New(s, r.arts, s.Engine(), r.root.FS(), r.opt); err != nil {
		t.Fatal(err)
	}
}

// close checks, like a store helper should, that every blob and every
// footprint in the file still hashes to its key, then closes it.
func (r *rig) close(t testing.TB) {
	t.Helper()
	if r.store == nil {
		return
	}
	ctx := context.Background()
	if _, problems, err := r.arts.Verify(ctx); err != nil {
		t.Errorf("artifact store at close: %v %q", err, problems)
	}
	if _, problems, err := r.x.Verify(ctx); err != nil {
		t.Errorf("footprints at close: %v %q", err, problems)
	}
	r.disc.Close()
	r.root.Close()
	r.store.Close()
	r.store = nil
}

func (r *rig) reopen(t testing.TB) {
	t.Helper()
	r.close(t)
	r.open(t)
}

// terms says which discovery term grounds each family and metric.
var terms = map[string]string{
	"MOM_WZS": "momentum", "MOM_REV": "mean reversion", "CARRY": "carry", "VOL_TGT": "vol targeting",
	"SRP": "sharpe", "MDD": "max drawdown", "ARET": "annualized return", "AVOL": "annualized volatility",
	"SRT": "sortino", "CLM": "calmar", "HIT": "hit rate", "TRN": "turnover", "TRET": "total return",
}

// groundOutcome runs discovery and the gate on req and returns the gate's
// outcome, admitted or not. A family or metric without a discovery term
// in terms is discovered by its name.
func (r *rig) groundOutcome(t testing.TB, req map[string]any) ground.Outcome {
	t.Helper()
	fam, met := req["family"].(string), req["metric"].(string)
	return r.groundTerms(t, req, cmpOr(terms[fam], fam), cmpOr(terms[met], met))
}

// groundTerms grounds req against the discovery of explicit terms.
func (r *rig) groundTerms(t testing.TB, req map[string]any, terms ...string) ground.Outcome {
	t.Helper()
	ctx := context.Background()
	res, err := r.disc.Discover(ctx, discover.Query{Terms: terms})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.gate.Ground(ctx, ground.Proposal{Request: body, DiscoveryID: res.ID})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ground obtains a *ground.Grounded the honest way: discovery over the
// terms that name the family and metric, then the gate.
func (r *rig) ground(t testing.TB, req map[string]any) *ground.Grounded {
	t.Helper()
	out := r.groundOutcome(t, req)
	if out.Grounded == nil {
		t.Fatalf("not admitted: %v: %+v", req, out.Record.Decision.Failures)
	}
	return out.Grounded
}

func (r *rig) execute(t testing.TB, req map[string]any) *Footprint {
	t.Helper()
	fp, err := r.x.Execute(context.Background(), r.ground(t, req))
	if err != nil {
		t.Fatalf("Execute(%v): %v", req, err)
	}
	return fp
}

func request(family, metric, data string, params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	return map[string]any{"family": family, "metric": metric, "data": data, "params": params}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// copyFile copies a real data file into dir under name.
func copyFile(t testing.TB, dir, name, src string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realData, src))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func hashingCanonical(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// putLegacy stores raw as the footprint under hash the way an earlier
// release did: without a record digest (DigestBucket).
func putLegacy(t *testing.T, db *bolt.DB, hash hashing.Digest, raw []byte) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(DigestBucket).Delete(hash.Key()); err != nil {
			return err
		}
		return tx.Bucket(Bucket).Put(hash.Key(), raw)
	}); err != nil {
		t.Fatal(err)
	}
}
