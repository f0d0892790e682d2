package execution

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
)

var update = flag.Bool("update", false, "rewrite the golden footprints in testdata/golden")

// goldenCases are executions on real data whose footprints are pinned
// byte for byte: all four families, several metrics, rejections, a
// missing source.
var goldenCases = []struct {
	name string
	req  map[string]any
	opt  Options
}{
	{"mom_wzs_srp_wti", request("MOM_WZS", "SRP", "wti-daily.csv", map[string]any{"window": []any{25, 50, 100}}), Options{}},
	{"mom_rev_mdd_ffn", request("MOM_REV", "MDD", "ffn-test-data.csv", map[string]any{"window": []any{5, 20}, "leverage": []any{1, 2}}), Options{}},
	{"carry_clm_cushing", request("CARRY", "CLM", "crude-oil-wti-cushing.csv", map[string]any{"window": []any{60, 120}}), Options{}},
	{"vol_tgt_srt_vix", request("VOL_TGT", "SRT", "vix-daily.csv", map[string]any{"risk_window": []any{20, 60}}), Options{}},
	{"mom_wzs_trn_gas_rejections", request("MOM_WZS", "TRN", "natural-gas-daily.csv", map[string]any{"window": []any{1, 25}, "leverage": []any{0.5, 1, 5}}), Options{MaxLeverage: 3}},
	{"vol_tgt_srp_sp500_gz", request("VOL_TGT", "SRP", "sp500.csv.gz", map[string]any{"lag": []any{1, 2}}), Options{}},
	{"missing_source", request("MOM_WZS", "SRP", "no/such/file.csv", map[string]any{"window": 50}), Options{}},
}

// legacyCases are the golden cases as the previous release pinned them
// (testdata/legacy): its catalog had no contracts, so leverage 0 reached
// the executor, whose domain predicate rejected it.
var legacyCases = func() []struct {
	name string
	req  map[string]any
	opt  Options
} {
	cs := slices.Clone(goldenCases)
	for i := range cs {
		if cs[i].name == "mom_wzs_trn_gas_rejections" {
			cs[i].req = request("MOM_WZS", "TRN", "natural-gas-daily.csv", map[string]any{"window": []any{1, 25}, "leverage": []any{0, 1, 5}})
		}
	}
	return cs
}()

// goldenBytes is the footprint as pinned: indented JSON without the
// grounding id (which depends on the discovery record, not on the
// execution).
func goldenBytes(t *testing.T, fp *Footprint) []byte {
	t.Helper()
	raw, err := json.Marshal(fp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	delete(m, "grounding")
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func TestGoldenFootprints(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, realData, c.opt)
			fp := r.execute(t, c.req)
			got := goldenBytes(t, fp)
			path := filepath.Join("testdata", "golden", c.name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenFootprints -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("footprint differs from %s (hash %s); if the change is intended, rerun with -update", path, fp.Hash)
			}
			// The golden file is a complete footprint: the execution hash
			// is recomputable from it alone.
			var back Footprint
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatal(err)
			}
			back.Grounding = fp.Grounding
			if err := back.check(); err != nil {
				t.Errorf("golden footprint does not check: %v", err)
			}
		})
	}
}

// Footprints of the previous release (CSV artifacts, no
// artifact_encoding, a catalog without contracts) still replay bit for
// bit: testdata/legacy holds the golden footprints as that release pinned
// them, and the catalog its databases were seeded with. Each is stored as
// the old server would have stored it, next to a fresh execution that
// stores the data blob, and replayed.
func TestLegacyFootprintsReplay(t *testing.T) {
	for _, c := range legacyCases {
		t.Run(c.name, func(t *testing.T) {
			r := newRigSeededWith(t, realData, c.opt, filepath.Join("testdata", "legacy", "catalog"))
			fresh := r.execute(t, c.req)
			raw, err := os.ReadFile(filepath.Join("testdata", "legacy", c.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var old Footprint
			if err := json.Unmarshal(raw, &old); err != nil {
				t.Fatal(err)
			}
			if old.ArtifactEncoding != EncodingCSV {
				t.Fatalf("legacy footprint records encoding %q", old.ArtifactEncoding)
			}
			old.Grounding = fresh.Grounding
			canon, err := hashing.Canonical(&old)
			if err != nil {
				t.Fatal(err)
			}
			putLegacy(t, r.store.DB(), old.Hash, canon)
			rep, err := r.x.Replay(context.Background(), old.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Match || rep.ReplayHash != old.Hash {
				t.Fatalf("a previous-release footprint no longer replays: %+v", rep.Layers)
			}
			if len(old.Morphisms) > 0 && old.Morphisms[0].Admissible && old.Layers.Artifacts == fresh.Layers.Artifacts {
				t.Fatal("the legacy and the new artifact encodings give the same artifacts layer: the test checks nothing")
			}
			// Its CSV blobs were never stored here (replay does not read
			// them): remove it so that the rig's closing check holds.
			r.store.DB().Update(func(tx *bolt.Tx) error { return tx.Bucket(Bucket).Delete(old.Hash.Key()) })
		})
	}
}
