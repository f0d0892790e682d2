package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// DiffReport compares two footprints layer by layer, in SPEC order.
type DiffReport struct {
	A      hashing.Digest `json:"a"`
	B      hashing.Digest `json:"b"`
	Same   bool           `json:"same"`
	Layers []LayerDiff    `json:"layers"`
	// Steps names, when either side is a pipeline, each step whose plan or
	// value differs, morphism by morphism (at most 256, earliest layers
	// first).
	Steps []StepChange `json:"steps,omitempty"`
}

// LayerDiff is one layer of a diff: the two digests, whether they are
// equal, and what differs inside the layer (only the field for this
// layer is set).
type LayerDiff struct {
	Layer string         `json:"layer"`
	A     hashing.Digest `json:"a"`
	B     hashing.Digest `json:"b"`
	Same  bool           `json:"same"`
	// Registry (registry layer): the capabilities that differ between the
	// two registry versions, and whether the executions used them. Set
	// whenever the versions differ, even when the registry hash does not
	// (a change to aliases, tags or descriptions only).
	Registry *RegistryDiff `json:"registry,omitempty"`
	// Request (request layer): the fields that differ, by JSON pointer
	// into the request.
	Request []FieldDiff `json:"request,omitempty"`
	// Morphisms (morphisms, plans, artifacts and score layers): the grid
	// indices whose value in this layer differs.
	Morphisms []MorphismDiff `json:"morphisms,omitempty"`
	// Selection (selection layer).
	Selection *SelectionDiff `json:"selection,omitempty"`
	// Data (data layer).
	Data *DataDiff `json:"data,omitempty"`
}

// RegistryDiff compares two registry versions.
type RegistryDiff struct {
	VersionA uint64 `json:"version_a"`
	VersionB uint64 `json:"version_b"`
	// Added, Removed and Changed (same name, another identity) are the
	// capability changes that move the registry hash; Redescribed lists
	// the discovery-only changes (aliases, tags, descriptions), which do
	// not.
	Added       []CapChange `json:"added"`
	Removed     []CapChange `json:"removed"`
	Changed     []CapChange `json:"changed"`
	Redescribed []CapChange `json:"redescribed"`
	// Used counts the changes (added, removed, changed) that touch a
	// capability either execution used. Zero means no registry change
	// reached the plans or the metric.
	Used int `json:"used"`
	// DependenciesSame is true when both executions used the same
	// capabilities with the same identities.
	DependenciesSame bool   `json:"dependencies_same"`
	Note             string `json:"note,omitempty"`
}

// CapChange is one capability that differs between two registry versions.
type CapChange struct {
	Name string          `json:"name"`
	Kind registry.Kind   `json:"kind"`
	A    *hashing.Digest `json:"a"` // identity in A's version, null when absent
	B    *hashing.Digest `json:"b"`
	// Used is true when either execution used the capability (by name or
	// by identity).
	Used bool `json:"used"`
}

// FieldDiff is one differing JSON value; A or B is absent when the field
// exists on one side only.
type FieldDiff struct {
	Pointer string          `json:"pointer"`
	A       json.RawMessage `json:"a,omitempty"`
	B       json.RawMessage `json:"b,omitempty"`
}

// MorphismDiff is one grid index whose value in a layer differs: the hash
// (morphisms), the plan digest (plans), the artifacts (artifacts) or the
// score (score). A side is null when that grid has no such index or the
// morphism has no such value.
type MorphismDiff struct {
	Index int `json:"index"`
	A     any `json:"a"`
	B     any `json:"b"`
	// Params (morphisms layer) lists the bound parameters that differ, by
	// JSON pointer into the morphism's params.
	Params []FieldDiff `json:"params,omitempty"`
}

// SelectionDiff compares the selected morphisms.
type SelectionDiff struct {
	A      *hashing.Digest `json:"a"`
	B      *hashing.Digest `json:"b"`
	IndexA *int            `json:"index_a"`
	IndexB *int            `json:"index_b"`
}

// DataDiff compares the two sources. The rows, columns and date ranges come
// from the footprints; Compared says whether both data blobs were stored
// and read, in which case the dates and cells are compared too.
type DataDiff struct {
	PathA          string         `json:"path_a"`
	PathB          string         `json:"path_b"`
	DigestA        hashing.Digest `json:"digest_a"`
	DigestB        hashing.Digest `json:"digest_b"`
	RowsA          int            `json:"rows_a"`
	RowsB          int            `json:"rows_b"`
	FromA          *string        `json:"from_a"`
	ToA            *string        `json:"to_a"`
	FromB          *string        `json:"from_b"`
	ToB            *string        `json:"to_b"`
	ColumnsAdded   []string       `json:"columns_added"`
	ColumnsRemoved []string       `json:"columns_removed"`
	Compared       bool           `json:"compared"`
	Note           string         `json:"note,omitempty"`
	// DatesOnlyA / DatesOnlyB count the dates present in one file only,
	// with the first of them.
	DatesOnlyA int            `json:"dates_only_a"`
	DatesOnlyB int            `json:"dates_only_b"`
	FirstOnlyA *string        `json:"first_only_a"`
	FirstOnlyB *string        `json:"first_only_b"`
	Changed    []ColumnChange `json:"changed"`
}

// ColumnChange counts the cells of a column shared by both files that
// differ on dates shared by both (NA equals NA), with the first such date.
type ColumnChange struct {
	Column string `json:"column"`
	Cells  int    `json:"cells"`
	First  string `json:"first"`
}

// Diff compares the footprints stored under a and b layer by layer.
// Errors: ErrNotFound, ErrCorrupt.
func (x *Executor) Diff(ctx context.Context, a, b hashing.Digest) (*DiffReport, error) {
	fa, err := x.Get(ctx, a)
	if err != nil {
		return nil, err
	}
	fb, err := x.Get(ctx, b)
	if err != nil {
		return nil, err
	}
	r := &DiffReport{A: a, B: b, Same: a == b}
	if len(fa.Steps) > 0 || len(fb.Steps) > 0 {
		r.Steps = stepChanges(fa, fb)
	}
	la, lb := fa.Layers.List(), fb.Layers.List()
	for i, name := range LayerNames {
		d := LayerDiff{Layer: name, A: la[i], B: lb[i], Same: la[i] == lb[i]}
		switch name {
		case "registry":
			if !d.Same || fa.RegistryVersion != fb.RegistryVersion || fa.Dependencies != fb.Dependencies {
				d.Registry = x.registryDiff(ctx, fa, fb)
			}
		case "request":
			if !d.Same {
				d.Request = requestDiff(fa, fb)
			}
		case "morphisms", "plans", "artifacts", "score":
			if !d.Same {
				d.Morphisms = morphismDiffs(name, fa, fb)
			}
		case "selection":
			if !d.Same {
				d.Selection = &SelectionDiff{A: fa.Selected, B: fb.Selected, IndexA: fa.SelectedIndex, IndexB: fb.SelectedIndex}
			}
		case "data":
			if !d.Same || fa.Data.Path != fb.Data.Path {
				d.Data = x.dataDiff(ctx, fa, fb)
			}
		}
		r.Layers = append(r.Layers, d)
	}
	return r, nil
}

func (x *Executor) registryDiff(ctx context.Context, fa, fb *Footprint) *RegistryDiff {
	d := &RegistryDiff{VersionA: fa.RegistryVersion, VersionB: fb.RegistryVersion,
		Added: []CapChange{}, Removed: []CapChange{}, Changed: []CapChange{}, Redescribed: []CapChange{},
		DependenciesSame: fa.Dependencies == fb.Dependencies}
	used := map[string]bool{}
	usedID := map[hashing.Digest]bool{}
	for _, fp := range []*Footprint{fa, fb} {
		for _, c := range fp.Capabilities {
			used[c.Name] = true
			usedID[c.Identity] = true
		}
	}
	sa, errA := x.reg.Version(ctx, fa.RegistryVersion)
	sb, errB := x.reg.Version(ctx, fb.RegistryVersion)
	if errA != nil || errB != nil {
		d.Note = fmt.Sprintf("registry versions not readable (%v; %v): capability changes unknown", errA, errB)
		return d
	}
	if sa.Registry() != fa.Registry || sb.Registry() != fb.Registry {
		d.Note = "a stored registry version does not have the hash the footprint recorded"
	}
	ca, cb := sa.Capabilities(), sb.Capabilities() // both sorted by name
	i, j := 0, 0
	for i < len(ca) || j < len(cb) {
		switch {
		case j >= len(cb) || (i < len(ca) && ca[i].Name < cb[j].Name):
			id := ca[i].Identity
			d.Removed = append(d.Removed, CapChange{Name: ca[i].Name, Kind: ca[i].Kind, A: &id, Used: used[ca[i].Name] || usedID[id]})
			i++
		case i >= len(ca) || cb[j].Name < ca[i].Name:
			id := cb[j].Identity
			d.Added = append(d.Added, CapChange{Name: cb[j].Name, Kind: cb[j].Kind, B: &id, Used: used[cb[j].Name] || usedID[id]})
			j++
		default:
			a, b := ca[i], cb[j]
			ia, ib := a.Identity, b.Identity
			ch := CapChange{Name: a.Name, Kind: b.Kind, A: &ia, B: &ib, Used: used[a.Name] || usedID[ia] || usedID[ib]}
			if ia != ib {
				d.Changed = append(d.Changed, ch)
			} else if redescribed(a, b) {
				d.Redescribed = append(d.Redescribed, ch)
			}
			i++
			j++
		}
	}
	for _, l := range [][]CapChange{d.Added, d.Removed, d.Changed} {
		for _, c := range l {
			if c.Used {
				d.Used++
			}
		}
	}
	return d
}

// redescribed reports a change outside the identity: the discovery layer
// or the kind.
func redescribed(a, b registry.Capability) bool {
	da, errA := a.DiscoveryDigest()
	db, errB := b.DiscoveryDigest()
	return errA != nil || errB != nil || da != db || a.Kind != b.Kind
}

func requestDiff(fa, fb *Footprint) []FieldDiff {
	va, vb := canonicalValue(fa.Request), canonicalValue(fb.Request)
	out := []FieldDiff{}
	jsonDiff("", va, vb, &out)
	return out
}

// canonicalValue decodes v's canonical JSON into generic values, numbers
// kept as json.Number so that equality is exact.
func canonicalValue(v any) any {
	b, err := hashing.Canonical(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil
	}
	return out
}

// jsonDiff appends the RFC 6901 pointers at which a and b differ. Objects
// are compared key by key (sorted), arrays index by index; anything else
// as a whole. A missing side is a nil RawMessage.
func jsonDiff(ptr string, a, b any, out *[]FieldDiff) {
	if reflect.DeepEqual(a, b) {
		return
	}
	if ma, ok := a.(map[string]any); ok {
		if mb, ok := b.(map[string]any); ok {
			keys := map[string]bool{}
			for k := range ma {
				keys[k] = true
			}
			for k := range mb {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				va, okA := ma[k]
				vb, okB := mb[k]
				p := ptr + "/" + escapePointer(k)
				switch {
				case !okA:
					*out = append(*out, FieldDiff{Pointer: p, B: raw(vb)})
				case !okB:
					*out = append(*out, FieldDiff{Pointer: p, A: raw(va)})
				default:
					jsonDiff(p, va, vb, out)
				}
			}
			return
		}
	}
	if la, ok := a.([]any); ok {
		if lb, ok := b.([]any); ok {
			for i := range max(len(la), len(lb)) {
				p := ptr + "/" + strconv.Itoa(i)
				switch {
				case i >= len(la):
					*out = append(*out, FieldDiff{Pointer: p, B: raw(lb[i])})
				case i >= len(lb):
					*out = append(*out, FieldDiff{Pointer: p, A: raw(la[i])})
				default:
					jsonDiff(p, la[i], lb[i], out)
				}
			}
			return
		}
	}
	*out = append(*out, FieldDiff{Pointer: ptr, A: raw(a), B: raw(b)})
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func morphismDiffs(layer string, fa, fb *Footprint) []MorphismDiff {
	out := []MorphismDiff{}
	value := func(fp *Footprint, i int) any {
		if i >= len(fp.Morphisms) {
			return nil
		}
		m := fp.Morphisms[i]
		switch layer {
		case "morphisms":
			return m.Hash
		case "plans":
			return m.Plan
		case "artifacts":
			return m.Artifacts
		}
		return m.Score
	}
	for i := range max(len(fa.Morphisms), len(fb.Morphisms)) {
		a, b := value(fa, i), value(fb, i)
		if reflect.DeepEqual(canonicalValue(a), canonicalValue(b)) {
			continue
		}
		d := MorphismDiff{Index: i, A: a, B: b}
		if layer == "morphisms" && i < len(fa.Morphisms) && i < len(fb.Morphisms) {
			jsonDiff("", canonicalValue(fa.Morphisms[i].Params), canonicalValue(fb.Morphisms[i].Params), &d.Params)
		}
		out = append(out, d)
	}
	return out
}

func (x *Executor) dataDiff(ctx context.Context, fa, fb *Footprint) *DataDiff {
	a, b := fa.Data, fb.Data
	d := &DataDiff{PathA: a.Path, PathB: b.Path, DigestA: a.Digest, DigestB: b.Digest,
		RowsA: a.Rows, RowsB: b.Rows, FromA: a.From, ToA: a.To, FromB: b.From, ToB: b.To,
		ColumnsAdded: minus(b.Columns, a.Columns), ColumnsRemoved: minus(a.Columns, b.Columns),
		Changed: []ColumnChange{}}
	if a.Digest == b.Digest {
		d.Note = "same bytes"
		return d
	}
	if a.Missing != "" || b.Missing != "" {
		d.Note = "a source was not read"
		return d
	}
	srcA, errA := x.storedSource(ctx, fa)
	srcB, errB := x.storedSource(ctx, fb)
	if errA != nil || errB != nil {
		d.Note = "a data blob is not stored intact: compared from the footprints only"
		return d
	}
	frA, errA := parseSource(srcA, max(x.opt.MaxDataBytes, int64(len(srcA.raw))))
	frB, errB := parseSource(srcB, max(x.opt.MaxDataBytes, int64(len(srcB.raw))))
	if errA != nil || errB != nil {
		d.Note = "a data blob does not parse: compared from the footprints only"
		return d
	}
	compareFrames(d, frA, frB)
	return d
}

// compareFrames merges the two date indexes (both sorted) and counts the
// dates on one side only and, on shared dates, the differing cells of each
// shared column.
func compareFrames(d *DataDiff, a, b *frame.Frame) {
	d.Compared = true
	type pair struct{ ja, jb int }
	var shared []pair
	for ja, name := range a.Names() {
		if jb := b.Index(name); jb >= 0 {
			shared = append(shared, pair{ja, jb})
		}
	}
	counts := make([]int, len(shared))
	firsts := make([]string, len(shared))
	da, db := a.Dates(), b.Dates()
	i, j := 0, 0
	for i < len(da) || j < len(db) {
		switch {
		case j >= len(db) || (i < len(da) && da[i] < db[j]):
			if d.DatesOnlyA == 0 {
				s := da[i].String()
				d.FirstOnlyA = &s
			}
			d.DatesOnlyA++
			i++
		case i >= len(da) || db[j] < da[i]:
			if d.DatesOnlyB == 0 {
				s := db[j].String()
				d.FirstOnlyB = &s
			}
			d.DatesOnlyB++
			j++
		default:
			for k, p := range shared {
				va, vb := a.Column(p.ja)[i], b.Column(p.jb)[j]
				if va != vb && !(va != va && vb != vb) {
					if counts[k] == 0 {
						firsts[k] = da[i].String()
					}
					counts[k]++
				}
			}
			i++
			j++
		}
	}
	for k, p := range shared {
		if counts[k] > 0 {
			d.Changed = append(d.Changed, ColumnChange{Column: a.Names()[p.ja], Cells: counts[k], First: firsts[k]})
		}
	}
}

func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	out := []string{}
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
