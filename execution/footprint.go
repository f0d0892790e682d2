package execution

import (
	"fmt"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// LayerNames lists the eight layers in the pinned order of SPEC §6: the
// order of the execution hash, of ReplayReport.Layers and of
// DiffReport.Layers.
var LayerNames = []string{"registry", "request", "morphisms", "plans", "artifacts", "score", "selection", "data"}

// Layers holds the eight layer digests (see the package documentation for
// what each covers).
type Layers struct {
	Registry  hashing.Digest `json:"registry"`
	Request   hashing.Digest `json:"request"`
	Morphisms hashing.Digest `json:"morphisms"`
	Plans     hashing.Digest `json:"plans"`
	Artifacts hashing.Digest `json:"artifacts"`
	Score     hashing.Digest `json:"score"`
	Selection hashing.Digest `json:"selection"`
	Data      hashing.Digest `json:"data"`
}

// List returns the digests in LayerNames order.
func (l Layers) List() []hashing.Digest {
	return []hashing.Digest{l.Registry, l.Request, l.Morphisms, l.Plans, l.Artifacts, l.Score, l.Selection, l.Data}
}

// Hash is the pinned execution hash: SHA-256 over the eight layer digests
// in SPEC order, each followed by "\n".
func (l Layers) Hash() hashing.Digest { return hashing.LayerList(l.List()) }

// Footprint is the stored record of one execution. Field names pinned by
// SPEC §6: hash, layers, request, registry_version, morphisms (hash,
// params, admissible, rejected, score) and selected.
type Footprint struct {
	Hash   hashing.Digest `json:"hash"`
	Layers Layers         `json:"layers"`
	// Grounding is the id of the grounding record that admitted the
	// request. It is not hashed: footprints are keyed by the execution
	// hash, and the first grounding to produce an execution is recorded.
	Grounding hashing.Digest `json:"grounding"`
	// Policies is the digest of the policy set (SPEC §10) that admitted
	// that grounding; like Grounding, it is recorded, not hashed. Always
	// set since policies exist; absent from older footprints.
	Policies        *hashing.Digest `json:"policies,omitempty"`
	Request         ground.Request  `json:"request"`
	RegistryVersion uint64          `json:"registry_version"`
	Registry        hashing.Digest  `json:"registry"`
	// Family is the request's family; absent for a pipeline, whose steps
	// are listed in Steps with their layers.
	Family *CapRef `json:"family,omitempty"`
	// Steps lists a pipeline's steps in the order requested, each with its
	// capability and layer (SPEC §11).
	Steps      []StepInfo `json:"steps,omitempty"`
	Metric     MetricRef  `json:"metric"`
	Data       DataInfo   `json:"data"`
	Risk       RiskPolicy `json:"risk"`
	Evaluation Evaluation `json:"evaluation"`
	Morphisms  []Morphism `json:"morphisms"`
	// Selected is the hash of the selected morphism, null when no
	// morphism has a score.
	Selected      *hashing.Digest `json:"selected"`
	SelectedIndex *int            `json:"selected_index"`
	// Plans holds every distinct compiled plan, keyed by its digest.
	Plans map[string]Plan `json:"plans"`
	// Capabilities lists every registry capability the execution used —
	// the union of the plans' capabilities and the metric — sorted by
	// name, then identity.
	Capabilities []CapRef `json:"capabilities"`
	// Dependencies is SHA-256 of the canonical JSON of Capabilities: equal
	// for two executions exactly when they used the same capabilities
	// with the same identities, whatever else changed in the registry.
	Dependencies hashing.Digest `json:"dependencies"`
	// ArtifactEncoding names how the artifacts were encoded (and so what
	// their digests are over): EncodingSeries, or absent for footprints of
	// the previous release, whose artifacts were CSV. Replay re-encodes
	// the same way. It is not hashed: a wrong value only makes replay
	// report the artifacts layer as changed.
	ArtifactEncoding string `json:"artifact_encoding,omitempty"`

	// RunErrors holds, by morphism index, the error behind each "run: …"
	// domain reason, in this process only: never encoded or hashed (the
	// reason's text is), so that a caller (the fuzz runtime) classifies a
	// run's failure by the error, not by its text. A kernel's panic is a
	// *PanicError; a kernel's named failure wraps one of the kernel
	// package's sentinels, and so has a kind (errkind.Of). Nil for a
	// footprint read back from the store.
	RunErrors map[int]error `json:"-"`
}

// keepRunErrors gives f the run errors of a footprint computed here with
// the same hash (the stored copy Execute returns instead).
func (f *Footprint) keepRunErrors(from *Footprint) {
	if f != from && f.Hash == from.Hash {
		f.RunErrors = from.RunErrors
	}
}

// MetricRef is the scoring metric: its capability, the engine kernel its
// expression names, and the direction its sem.orientation gives.
type MetricRef struct {
	CapRef
	Kernel    string `json:"kernel"`
	Direction string `json:"direction"` // "maximize" or "minimize"
}

// DataInfo describes the source data.
type DataInfo struct {
	Path string `json:"path"`
	// Digest is BLAKE3 of the source bytes as stored (a .gz file's
	// compressed bytes); BLAKE3 of no bytes when the source could not be
	// read (Missing says why).
	Digest  hashing.Digest `json:"digest"`
	Bytes   int            `json:"bytes"`
	Missing string         `json:"missing,omitempty"`
	Rows    int            `json:"rows"`
	Columns []string       `json:"columns"`
	From    *string        `json:"from"`
	To      *string        `json:"to"`
}

// RiskPolicy records the risk filter an execution ran with, so that a
// replay applies the same one.
type RiskPolicy struct {
	MaxLeverage float64  `json:"max_leverage"`
	Predicates  []string `json:"predicates"`
}

// Evaluation is the common evaluation window of the grid: from the first
// row on which every admissible morphism's P&L is defined to the last row.
// Start, From and To are null when there is no such row.
type Evaluation struct {
	Start *int    `json:"start"`
	From  *string `json:"from"`
	To    *string `json:"to"`
	Rows  int     `json:"rows"`
}

// Morphism is one grid point of the execution.
type Morphism struct {
	Index int            `json:"index"`
	Hash  hashing.Digest `json:"hash"`
	// Params binds every parameter: the request's values and the family's
	// defaults.
	Params map[string]Value `json:"params"`
	// Plan is the digest of the compiled plan; null when the expression
	// does not compile (the "resolves" predicate fails).
	Plan *hashing.Digest `json:"plan"`
	// Program is the content key of the plan's output node: a digest of
	// the kernel DAG alone (ops, identities, arguments), without the
	// plan's header naming a family or steps. A pipeline that spells out
	// a family's expression has the family's program. Recorded, not
	// hashed: the plans layer covers the plan it is read from.
	Program    *hashing.Digest `json:"program,omitempty"`
	Admissible bool            `json:"admissible"`
	// Rejected lists the failing predicates in Predicates order; [] when
	// admissible.
	Rejected []string `json:"rejected"`
	// Reasons says what failed, one entry per failure.
	Reasons []Reason `json:"reasons"`
	// Artifacts are the outputs (pnl, then weights); [] when not run.
	Artifacts []Artifact `json:"artifacts"`
	// Score is the metric value; null when not run or NA.
	Score Score `json:"score"`
	// Contracts lists every contract clause checked for the morphism, in
	// the order checked, and whether it held (absent when none ran).
	Contracts []ClauseVerdict `json:"contracts,omitempty"`
	// Steps holds, for a pipeline, each step's plan digest and the digest
	// of the value it computed (null unless the morphism ran and its
	// outputs were committed), in layout order.
	Steps []StepRun `json:"steps,omitempty"`
}

// Reason explains one failing predicate.
type Reason struct {
	Predicate string `json:"predicate"`
	Detail    string `json:"detail"`
}

// Artifact is one stored output of a morphism.
type Artifact struct {
	Name   string         `json:"name"`
	Digest hashing.Digest `json:"digest"`
	Bytes  int            `json:"bytes"`
}

// scoreList is the hashed form of the score layer.
func (fp *Footprint) scoreList() []Score {
	out := make([]Score, len(fp.Morphisms))
	for i, m := range fp.Morphisms {
		out[i] = m.Score
	}
	return out
}

// computeLayers derives the eight layer digests from the footprint body.
// It is the one place the layers are defined: Execute and Replay fill
// them with it, Get checks stored footprints against it.
func (fp *Footprint) computeLayers() (Layers, error) {
	var l Layers
	var err error
	l.Registry = fp.Registry
	if l.Request, err = fp.Request.Hash(); err != nil {
		return l, fmt.Errorf("request layer: %w", err)
	}
	var ms, ps, as []hashing.Digest
	for _, m := range fp.Morphisms {
		ms = append(ms, m.Hash)
		if m.Plan != nil {
			ps = append(ps, *m.Plan)
		}
		for _, a := range m.Artifacts {
			as = append(as, a.Digest)
		}
		// A pipeline's steps: the plans layer covers the step DAG (each
		// step's plan digest), the artifacts layer every step's value.
		for _, s := range m.Steps {
			ps = append(ps, s.Plan)
			if s.Output != nil {
				as = append(as, *s.Output)
			}
		}
	}
	l.Morphisms = hashing.LayerList(ms)
	l.Plans = hashing.LayerList(ps)
	l.Artifacts = hashing.LayerList(as)
	if l.Score, err = hashing.SHA256Of(fp.scoreList()); err != nil {
		return l, fmt.Errorf("score layer: %w", err)
	}
	if fp.Selected != nil {
		l.Selection = hashing.SumSHA256([]byte(fp.Selected.String()))
	} else {
		l.Selection = hashing.SumSHA256([]byte("null"))
	}
	l.Data = fp.Data.Digest
	return l, nil
}

// check verifies a footprint against itself: every layer recomputed from
// the body, the hash from the layers, every plan against its digest, the
// dependency digest against the capabilities, the selection against the
// morphisms.
func (fp *Footprint) check() error {
	l, err := fp.computeLayers()
	if err != nil {
		return err
	}
	for i, name := range LayerNames {
		if got, want := l.List()[i], fp.Layers.List()[i]; got != want {
			return fmt.Errorf("layer %s: the body gives %s, the record says %s", name, got, want)
		}
	}
	if h := fp.Layers.Hash(); h != fp.Hash {
		return fmt.Errorf("the layers hash to %s, the record says %s", h, fp.Hash)
	}
	for key, p := range fp.Plans {
		d, err := p.Digest()
		if err != nil || d.String() != key {
			return fmt.Errorf("plan %s hashes to %s", key, d)
		}
	}
	for _, m := range fp.Morphisms {
		if m.Plan != nil {
			p, ok := fp.Plans[m.Plan.String()]
			if !ok {
				return fmt.Errorf("morphism %d: plan %s is not in the record", m.Index, m.Plan)
			}
			if m.Program != nil && (p.Output < 0 || p.Output >= len(p.Nodes) || contentKeys(p.Nodes)[p.Output] != m.Program.String()) {
				return fmt.Errorf("morphism %d: program %s is not its plan's", m.Index, m.Program)
			}
		}
	}
	if d, err := hashing.SHA256Of(fp.Capabilities); err != nil || d != fp.Dependencies {
		return fmt.Errorf("dependencies digest %s does not match the capabilities", fp.Dependencies)
	}
	if (fp.Selected == nil) != (fp.SelectedIndex == nil) {
		return fmt.Errorf("selected and selected_index disagree")
	}
	if fp.SelectedIndex != nil {
		i := *fp.SelectedIndex
		if i < 0 || i >= len(fp.Morphisms) || fp.Morphisms[i].Hash != *fp.Selected {
			return fmt.Errorf("selected_index %d does not hold the selected morphism", i)
		}
	}
	return nil
}
