package execution

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/series"
)

// counts returns how many footprints and blobs the file holds.
func (r *rig) counts(t testing.TB) (fps, blobs int) {
	t.Helper()
	r.store.DB().View(func(tx *bolt.Tx) error {
		// The buckets are made by the first write to each.
		if b := tx.Bucket(Bucket); b != nil {
			fps = b.Stats().KeyN
		}
		if b := tx.Bucket(artifacts.Bucket); b != nil {
			blobs = b.Stats().KeyN
		}
		return nil
	})
	return fps, blobs
}

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// Malformed data gives ErrBadData naming the file, line and column, and
// stores nothing: no footprint, no blob.
func TestBadData(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"ragged.csv":       []byte("Date,A,B\n2020-01-01,1,2\n2020-01-02,3\n2020-01-03,4,5\n"),
		"dupdate.csv":      []byte("Date,A\n2020-01-01,1\n2020-01-02,2\n2020-01-02,3\n"),
		"unsorted.csv":     []byte("Date,A\n2020-01-02,1\n2020-01-01,2\n"),
		"nonnumeric.csv":   []byte("Date,A,B\n2020-01-01,1,2\n2020-01-02,3,abc\n"),
		"baddate.csv":      []byte("Date,A\n2020-13-01,1\n"),
		"empty.csv":        {},
		"blank.csv":        []byte("\n \n\t\n"),
		"header-only.csv":  []byte("Date,A,B\n"),
		"no-columns.csv":   []byte("Date\n2020-01-01\n"),
		"not-gzip.csv.gz":  []byte("Date,A\n2020-01-01,1\n"),
		"ragged.csv.gz":    gz(t, "Date,A,B\n2020-01-01,1,2\n2020-01-02,3\n"),
		"truncated.csv.gz": gz(t, "Date,A\n2020-01-01,1\n2020-01-02,2\n")[:20],
		"bom-dup.csv":      []byte("\ufeffDate;A;A\n2020-01-01;1;2\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newRig(t, dir, Options{})
	ctx := context.Background()
	cases := []struct {
		file     string
		sentinel error
		where    string // substring of the message: file, line, column
	}{
		{"ragged.csv", frame.ErrRagged, "ragged.csv: line 3"},
		{"dupdate.csv", frame.ErrDuplicateDate, "dupdate.csv: line 4"},
		{"unsorted.csv", frame.ErrUnsorted, "unsorted.csv: line 3"},
		{"nonnumeric.csv", frame.ErrNumber, `nonnumeric.csv: line 3, column 3 "B"`},
		{"baddate.csv", frame.ErrDate, "baddate.csv: line 2, column 1"},
		{"empty.csv", frame.ErrEmpty, "empty.csv"},
		{"blank.csv", frame.ErrEmpty, "blank.csv"},
		{"header-only.csv", frame.ErrNoRows, "header-only.csv"},
		{"no-columns.csv", frame.ErrNoColumns, "no-columns.csv"},
		{"not-gzip.csv.gz", nil, "not-gzip.csv.gz: gzip"},
		{"ragged.csv.gz", frame.ErrRagged, "ragged.csv.gz: line 3"},
		{"truncated.csv.gz", nil, "truncated.csv.gz"},
		{"bom-dup.csv", frame.ErrDuplicateColumn, "bom-dup.csv"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			fps, blobs := r.counts(t)
			g := r.ground(t, request("MOM_WZS", "SRP", c.file, map[string]any{"window": []any{2, 3}}))
			fp, err := r.x.Execute(ctx, g)
			if fp != nil || !errors.Is(err, ErrBadData) {
				t.Fatalf("Execute = %v, %v; want ErrBadData", fp, err)
			}
			if c.sentinel != nil {
				var pe *frame.ParseError
				if !errors.Is(err, c.sentinel) || !errors.As(err, &pe) {
					t.Errorf("error %v does not wrap %v in a *frame.ParseError", err, c.sentinel)
				}
			}
			if !strings.Contains(err.Error(), c.where) {
				t.Errorf("error %q does not say %q", err, c.where)
			}
			if f2, b2 := r.counts(t); f2 != fps || b2 != blobs {
				t.Errorf("a failed execution stored something: footprints %d → %d, blobs %d → %d", fps, f2, blobs, b2)
			}
			t.Logf("%v", err)
		})
	}
}

// Negative prices are data (WTI settled at −36.98 on 2020-04-20): log
// returns are NA on that row and the next valid one, and the execution
// runs. A file with nothing but negative prices runs too and gives no P&L:
// every score is null, nothing is selected, and the footprint says so.
func TestNegativePrices(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, dir, "wti.csv", "wti-daily.csv")
	neg := "Date,A\n"
	for i := 1; i <= 28; i++ {
		neg += "2020-02-" + two(i) + ",-" + two(i) + ".5\n"
	}
	os.WriteFile(filepath.Join(dir, "negative.csv"), []byte(neg), 0o644)
	r := newRig(t, dir, Options{})
	ctx := context.Background()

	fp := r.execute(t, request("VOL_TGT", "SRP", "wti.csv", map[string]any{"risk_window": 20}))
	raw, err := r.arts.Get(ctx, fp.Morphisms[0].Artifacts[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	pnl, err := series.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	at := func(day string) float64 {
		tm, _ := time.Parse(time.DateOnly, day)
		d := int32(frame.DateOf(tm.Year(), tm.Month(), tm.Day()))
		i, ok := slices.BinarySearch(pnl.Dates, d)
		if !ok {
			t.Fatalf("no row for %s", day)
		}
		return pnl.Cols[0][i]
	}
	for _, day := range []string{"2020-04-20", "2020-04-21"} {
		if v := at(day); !math.IsNaN(v) {
			t.Errorf("P&L on %s is %v, not NA", day, v)
		}
	}
	if v := at("2020-04-22"); math.IsNaN(v) {
		t.Error("P&L on 2020-04-22 should be defined")
	}

	// Too short for the volatility look-back: the family's precondition
	// says so by name before anything runs, and nothing is stored.
	fp = r.execute(t, request("MOM_WZS", "SRP", "negative.csv", map[string]any{"window": []any{2, 3}}))
	if fp.Selected != nil || fp.Evaluation.Start != nil {
		t.Fatalf("selected %v, evaluation %+v", fp.Selected, fp.Evaluation)
	}
	for _, m := range fp.Morphisms {
		if m.Admissible || !slices.Equal(m.Rejected, []string{PredPre}) || len(m.Artifacts) != 0 ||
			!strings.Contains(m.Reasons[0].Detail, "F9 pre MOM_WZS.history_covers_risk_window") {
			t.Fatalf("morphism %d: %+v", m.Index, m)
		}
		if _, ok := m.Score.Value(); ok {
			t.Fatalf("morphism %d has a score", m.Index)
		}
	}
}

func two(i int) string {
	if i < 10 {
		return "0" + string(rune('0'+i))
	}
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}

// Paths that leave the data root — "..", absolute paths, a symlink out of
// it — and paths with no file are named risk rejections: every morphism
// fails "data", nothing outside the root is read, no data blob is stored,
// and the footprint is complete (data layer = BLAKE3 of no bytes).
func TestDataPathEscapes(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	copyFile(t, root, "inside.csv", "ffn-test-data.csv")
	copyFile(t, parent, "outside.csv", "ffn-test-data.csv") // a real CSV next to the root
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(parent, "outside.csv"), filepath.Join(root, "link-out.csv")))
	must(os.Symlink("../../outside.csv", filepath.Join(root, "sub", "rel-out.csv")))
	must(os.Symlink(filepath.Join(parent), filepath.Join(root, "dirlink")))
	must(os.Symlink("inside.csv", filepath.Join(root, "link-in.csv"))) // stays inside: allowed

	r := newRig(t, root, Options{})
	ctx := context.Background()
	empty := hashing.SumBLAKE3(nil)
	cases := []struct {
		path, reason string
	}{
		{"../outside.csv", missingInvalid},
		{"sub/../../outside.csv", missingInvalid},
		{"/etc/passwd", missingInvalid},
		{filepath.Join(parent, "outside.csv"), missingInvalid},
		{"./inside.csv", missingInvalid},
		{"sub//inside.csv", missingInvalid},
		{"sub\\..\\..\\outside.csv", missingInvalid},
		{"link-out.csv", missingOutside},
		{"sub/rel-out.csv", missingOutside},
		{"dirlink/outside.csv", missingOutside},
		{"missing.csv", missingNotExist},
		{"sub", missingNotFile},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.path, "/", "|"), func(t *testing.T) {
			_, blobs := r.counts(t)
			fp := r.execute(t, request("MOM_WZS", "SRP", c.path, map[string]any{"window": []any{10, 20}}))
			if fp.Data.Missing != c.reason || fp.Data.Digest != empty || fp.Layers.Data != empty || fp.Data.Rows != 0 {
				t.Fatalf("data %+v, want missing %q", fp.Data, c.reason)
			}
			for _, m := range fp.Morphisms {
				if m.Admissible || strings.Join(m.Rejected, ",") != PredData || len(m.Artifacts) != 0 {
					t.Fatalf("morphism %d: admissible %v, rejected %v", m.Index, m.Admissible, m.Rejected)
				}
			}
			if fp.Selected != nil {
				t.Fatal("something was selected")
			}
			if _, b2 := r.counts(t); b2 != blobs {
				t.Fatalf("blobs %d → %d: something was read and stored", blobs, b2)
			}
			stored, err := r.x.Get(ctx, fp.Hash)
			if err != nil || stored.Hash != fp.Hash {
				t.Fatalf("the footprint is not stored whole: %v", err)
			}
			if rep, err := r.x.Replay(ctx, fp.Hash); err != nil || !rep.Match {
				t.Fatalf("replay: %v %+v", err, rep)
			}
		})
	}
	// The link that stays inside the root is followed.
	fp := r.execute(t, request("MOM_WZS", "SRP", "link-in.csv", map[string]any{"window": []any{10, 20}}))
	if fp.Data.Missing != "" || fp.Selected == nil {
		t.Fatalf("link inside the root: %+v", fp.Data)
	}
}

// A data file over the size limit is ErrBadData; so is a gzip stream that
// inflates past it.
func TestDataSizeLimit(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, dir, "big.csv", "wti-daily.csv")
	os.WriteFile(filepath.Join(dir, "bomb.csv.gz"), gz(t, "Date,A\n"+strings.Repeat("\n", 1<<16)), 0o644)
	r := newRig(t, dir, Options{MaxDataBytes: 1 << 15})
	for _, p := range []string{"big.csv", "bomb.csv.gz"} {
		_, err := r.x.Execute(context.Background(), r.ground(t, request("VOL_TGT", "SRP", p, nil)))
		if !errors.Is(err, ErrBadData) {
			t.Errorf("%s: %v, want ErrBadData", p, err)
		}
	}
}

// FuzzCompute: whatever bytes the data file holds, an execution either
// fails with ErrBadData or yields a footprint that checks against itself —
// never a panic, never another error.
func FuzzCompute(f *testing.F) {
	snap := seededSnapshot(f)
	for _, s := range []string{
		"Date,A\n2020-01-01,1\n2020-01-02,2\n2020-01-03,-1\n2020-01-06,4\n",
		"Date;A;B\r\n1/2/2020;1;NA\r\n1/3/2020;.;2\r\n",
		"Date,A,B\n2020-01-01,1,2\n2020-01-02,3\n",
		"",
	} {
		f.Add([]byte(s), "A", "B")
	}
	b, _ := os.ReadFile(filepath.Join(realData, "ffn-test-data.csv"))
	f.Add(b[:2000], "AAPL", "MSFT")
	f.Fuzz(func(t *testing.T, data []byte, front, next string) {
		for _, fam := range []string{"MOM_WZS", "CARRY", "VOL_TGT"} {
			req := ground.Request{Family: fam, Metric: "TRN", Data: "fuzz.csv", Params: map[string]ground.Param{
				"window":      {Values: []ground.Scalar{ground.Number(2), ground.Number(3)}, List: true},
				"risk_window": {Values: []ground.Scalar{ground.Number(2)}},
			}}
			if fam == "CARRY" {
				req.Params["front"] = ground.Param{Values: []ground.Scalar{ground.String(front)}}
				req.Params["next"] = ground.Param{Values: []ground.Scalar{ground.String(next)}}
			}
			if fam == "VOL_TGT" {
				delete(req.Params, "window")
			}
			out, err := compute(context.Background(), input{snap: snap, req: req, src: source{path: "fuzz.csv", raw: data},
				risk: RiskPolicy{MaxLeverage: 10, Predicates: Predicates()}, maxBytes: 1 << 20}, runOptions{workers: 2, share: true, artifacts: true})
			if err != nil {
				if !errors.Is(err, ErrBadData) {
					t.Fatalf("%s: %v", fam, err)
				}
				continue
			}
			if err := out.fp.check(); err != nil {
				t.Fatalf("%s: %v", fam, err)
			}
		}
	})
}
