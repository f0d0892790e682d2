package experiments

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/groundgate/groundgate/ground"
)

// TermNames is the experiments' own statement of what each discovery term
// names, written from DOMAIN.md, independent of the discovery
// implementation: the selectivity experiments expect the gate to admit a
// proposal exactly when its family and its metric are both named by a
// term of the context.
var TermNames = map[string]string{
	"momentum": "MOM_WZS", "mean reversion": "MOM_REV", "carry": "CARRY", "vol targeting": "VOL_TGT",
	"sharpe": "SRP", "max drawdown": "MDD", "drawdown": "MDD", "sortino": "SRT", "calmar": "CLM",
	"hit rate": "HIT", "turnover": "TRN", "total return": "TRET", "annualized volatility": "AVOL",
	"annualized return": "ARET",
}

// The evaluation vocabulary: the paper's 4 strategy families and 9
// metrics (36 valid pairs).
var (
	Families = []string{"MOM_WZS", "MOM_REV", "CARRY", "VOL_TGT"}
	Metrics  = []string{"SRP", "MDD", "ARET", "AVOL", "SRT", "CLM", "HIT", "TRN", "TRET"}
)

// Fabricated names: plausible but nonexistent, and plainly made up (a
// wrong case is a different name: names are case-sensitive).
var (
	FakeFamilies = []string{"TREND_FOLLOW", "MOM_XSEC", "PAIRS_TRADE", "mom_wzs", "MOMENTUM"}
	FakeMetrics  = []string{"TRACKING_ERR", "SHARPE", "INFO_RATIO", "srp"}
)

// Context is one discovery context of the 96-tuple experiment: the terms
// discovered from, and the 4 families × 4 metrics proposed against them.
type Context struct {
	Terms    []string `json:"terms"`
	Families []string `json:"families"`
	Metrics  []string `json:"metrics"`
	// WantFamilies × WantMetrics is how many of the 16 proposals the
	// design grounds; the run checks TermNames agrees.
	WantFamilies int `json:"want_families"`
	WantMetrics  int `json:"want_metrics"`
}

// Contexts96 is the paper's selectivity experiment (§4.1, Table 3): 96
// tuples over 6 discovery contexts across all four families, 27 grounded
// and 69 not — cross-family proposals, semantic inversion (MOM_REV when
// only "momentum" was said), plausible nonexistent names (TREND_FOLLOW,
// TRACKING_ERR), undiscovered families in multi-family contexts, and
// fabricated names.
var Contexts96 = []Context{
	{[]string{"momentum", "sharpe"}, []string{"MOM_WZS", "MOM_REV", "CARRY", "TREND_FOLLOW"}, []string{"SRP", "MDD", "TRACKING_ERR", "SHARPE"}, 1, 1},
	{[]string{"mean reversion", "drawdown", "sortino"}, []string{"MOM_REV", "MOM_WZS", "VOL_TGT", "PAIRS_TRADE"}, []string{"MDD", "SRT", "SRP", "INFO_RATIO"}, 1, 2},
	{[]string{"carry", "sharpe", "calmar", "hit rate"}, []string{"CARRY", "MOM_WZS", "VOL_TGT", "MOM_XSEC"}, []string{"SRP", "CLM", "HIT", "TRACKING_ERR"}, 1, 3},
	{[]string{"vol targeting", "momentum", "sharpe", "max drawdown"}, []string{"VOL_TGT", "MOM_WZS", "MOM_REV", "CARRY"}, []string{"SRP", "MDD", "SRT", "srp"}, 2, 2},
	{[]string{"momentum", "carry", "mean reversion", "sharpe", "turnover", "total return"}, []string{"MOM_WZS", "CARRY", "MOM_REV", "VOL_TGT"}, []string{"SRP", "TRN", "TRET", "MDD"}, 3, 3},
	{[]string{"vol targeting", "carry", "sharpe", "sortino", "calmar", "annualized volatility"}, []string{"VOL_TGT", "CARRY", "MOM_WZS", "mom_wzs"}, []string{"SRP", "SRT", "CLM", "AVOL"}, 2, 4},
}

// GeneratedContexts is the larger generated set's contexts: the six of
// Contexts96, one per term of TermNames (a family alone, a metric alone),
// two that discover no family ("trend", "pairs trading") and one naming
// every family and metric. Every context is crossed with every real and
// fabricated family and metric.
func GeneratedContexts() [][]string {
	var ctxs [][]string
	for _, c := range Contexts96 {
		ctxs = append(ctxs, c.Terms)
	}
	terms := make([]string, 0, len(TermNames))
	for t := range TermNames {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	for _, t := range terms {
		ctxs = append(ctxs, []string{t})
	}
	return append(ctxs,
		[]string{"trend", "sharpe"},
		[]string{"pairs trading", "drawdown"},
		[]string{"momentum", "mean reversion", "carry", "vol targeting", "sharpe", "max drawdown", "sortino", "calmar", "hit rate", "turnover", "total return", "annualized volatility", "annualized return"})
}

// Request is the request document proposed in the selectivity
// experiments: family and metric with a 3-point sweep over a parameter
// the family takes (VOL_TGT has no signal window: it sweeps risk_window).
func Request(family, metric string) []byte {
	sweep := "window"
	if family == "VOL_TGT" {
		sweep = "risk_window"
	}
	return []byte(fmt.Sprintf(`{"family":%q,"metric":%q,"params":{%q:[25,50,100]},"data":"oil-spot/wti-daily.csv"}`, family, metric, sweep))
}

// Confusion is a gate confusion matrix: rows are the experiment's own
// grounding status, columns the gate's decision.
type Confusion struct {
	GroundedAdmitted   int `json:"grounded_admitted"`
	GroundedRejected   int `json:"grounded_rejected"`   // false rejects
	UngroundedAdmitted int `json:"ungrounded_admitted"` // false admits
	UngroundedRejected int `json:"ungrounded_rejected"`
}

// Total is the number of tuples.
func (c Confusion) Total() int {
	return c.GroundedAdmitted + c.GroundedRejected + c.UngroundedAdmitted + c.UngroundedRejected
}

func (c Confusion) String() string {
	return fmt.Sprintf("grounded: %d admitted, %d rejected; ungrounded: %d admitted, %d rejected",
		c.GroundedAdmitted, c.GroundedRejected, c.UngroundedAdmitted, c.UngroundedRejected)
}

// PaperTable3 is the paper's Table 3.
var PaperTable3 = Confusion{GroundedAdmitted: 27, GroundedRejected: 0, UngroundedAdmitted: 0, UngroundedRejected: 69}

// SelectivityResult is one selectivity experiment's outcome.
type SelectivityResult struct {
	Name       string    `json:"name"`
	Contexts   int       `json:"contexts"`
	Tuples     int       `json:"tuples"`
	Grounded   int       `json:"grounded"`
	Ungrounded int       `json:"ungrounded"`
	Confusion  Confusion `json:"confusion"`
	// Paper is the paper's figure; nil for the generated set, which is
	// ours (the claim is the same: no false admit, no false reject).
	Paper *Confusion `json:"paper"`
	// CodesChecked counts the rejections whose failure codes were checked
	// (F2 for a name not in the registry, F3/F4 for a real but undiscovered
	// family/metric, F5 beside it when the other field is grounded);
	// CodesWrong counts those that were not as expected.
	CodesChecked int `json:"codes_checked"`
	CodesWrong   int `json:"codes_wrong"`
	// Failures counts the failure entries of the rejections by code (a
	// rejection has one entry per failing field; F5 is counted beside the
	// field's own code).
	Failures map[ground.Code]int `json:"failures_by_code"`
	// Problems describes every false decision and wrong code.
	Problems []string `json:"problems"`
	Pass     bool     `json:"pass"`
}

// expected says whether family and metric are both named by terms.
func expected(terms []string, family, metric string) (fam, met bool) {
	for _, t := range terms {
		fam = fam || TermNames[t] == family
		met = met || TermNames[t] == metric
	}
	return fam, met
}

// selectivity grounds every family × metric of each context and tallies.
func selectivity(ctx context.Context, env *Env, name string, ctxs [][]string, cross func(i int) (fams, mets []string)) (*SelectivityResult, error) {
	res := &SelectivityResult{Name: name, Contexts: len(ctxs), Failures: map[ground.Code]int{}, Problems: []string{}}
	for i, terms := range ctxs {
		disc, err := env.discoverTerms(ctx, terms...)
		if err != nil {
			return nil, fmt.Errorf("discover %q: %w", terms, err)
		}
		fams, mets := cross(i)
		for _, f := range fams {
			for _, m := range mets {
				out, err := env.Gate.Ground(ctx, ground.Proposal{Request: Request(f, m), DiscoveryID: disc.ID})
				if err != nil {
					return nil, fmt.Errorf("ground %s/%s: %w", f, m, err)
				}
				famOK, metOK := expected(terms, f, m)
				want, got := famOK && metOK, out.Record.Decision.Admitted
				res.Tuples++
				if want {
					res.Grounded++
				} else {
					res.Ungrounded++
				}
				switch {
				case want && got:
					res.Confusion.GroundedAdmitted++
				case want:
					res.Confusion.GroundedRejected++
					res.Problems = append(res.Problems, fmt.Sprintf("%q: %s/%s falsely rejected: %+v", terms, f, m, out.Record.Decision.Failures))
				case got:
					res.Confusion.UngroundedAdmitted++
					res.Problems = append(res.Problems, fmt.Sprintf("%q: %s/%s falsely admitted", terms, f, m))
				default:
					res.Confusion.UngroundedRejected++
					res.CodesChecked++
					for _, fl := range out.Record.Decision.Failures {
						for _, c := range fl.Codes {
							res.Failures[c]++
						}
					}
					if probs := checkCodes(out, f, m, famOK, metOK); len(probs) > 0 {
						res.CodesWrong++
						for _, p := range probs {
							res.Problems = append(res.Problems, fmt.Sprintf("%q: %s/%s: %s", terms, f, m, p))
						}
					}
				}
			}
		}
	}
	return res, nil
}

// checkCodes verifies a rejection's codes: F2 for names not in the
// registry, F3/F4 for real but undiscovered ones, F5 beside the failing
// field when the other one is grounded, and no failure on a grounded
// field.
func checkCodes(out ground.Outcome, family, metric string, famOK, metOK bool) []string {
	var probs []string
	byField := map[string]ground.Failure{}
	for _, f := range out.Record.Decision.Failures {
		byField[f.Field] = f
	}
	check := func(field, name string, ok bool, real []string, unwarranted ground.Code, otherOK bool) {
		f, failed := byField[field]
		if ok {
			if failed {
				probs = append(probs, fmt.Sprintf("%s %s is grounded but failed: %+v", field, name, f))
			}
			return
		}
		if !failed {
			probs = append(probs, fmt.Sprintf("%s %s is not grounded but has no failure", field, name))
			return
		}
		code := unwarranted
		if !slices.Contains(real, name) {
			code = ground.F2
		}
		if f.Code != code {
			probs = append(probs, fmt.Sprintf("%s %s: code %s, want %s (%s)", field, name, f.Code, code, f.Detail))
		}
		if otherOK != slices.Contains(f.Codes, ground.F5) {
			probs = append(probs, fmt.Sprintf("%s %s: codes %v, F5 expected=%v", field, name, f.Codes, otherOK))
		}
	}
	check("family", family, famOK, Families, ground.F3, metOK)
	check("metric", metric, metOK, Metrics, ground.F4, famOK)
	return probs
}

// Selectivity96 runs the paper's 96-tuple experiment (§4.1, Table 3). It
// passes when the confusion matrix is exactly the paper's — 27 grounded,
// all admitted; 69 ungrounded, all rejected — and every rejection carries
// the expected failure codes.
func Selectivity96(ctx context.Context, env *Env) (*SelectivityResult, error) {
	ctxs := make([][]string, len(Contexts96))
	for i, c := range Contexts96 {
		ctxs[i] = c.Terms
	}
	res, err := selectivity(ctx, env, "selectivity-96", ctxs, func(i int) ([]string, []string) {
		return Contexts96[i].Families, Contexts96[i].Metrics
	})
	if err != nil {
		return nil, err
	}
	// The table itself must be what the design says it is.
	for i, c := range Contexts96 {
		n := 0
		for _, f := range c.Families {
			for _, m := range c.Metrics {
				if fam, met := expected(c.Terms, f, m); fam && met {
					n++
				}
			}
		}
		if n != c.WantFamilies*c.WantMetrics {
			res.Problems = append(res.Problems, fmt.Sprintf("context %d %q: TermNames grounds %d proposals, the design says %d", i, c.Terms, n, c.WantFamilies*c.WantMetrics))
		}
	}
	paper := PaperTable3
	res.Paper = &paper
	res.Pass = res.Confusion == paper && res.Tuples == 96 && res.Grounded == 27 && res.CodesWrong == 0 && len(res.Problems) == 0
	return res, nil
}

// SelectivityGenerated crosses every context of GeneratedContexts with
// every real and fabricated family and metric. It passes when the gate
// admits exactly the grounded pairs (no false admit, no false reject) and
// every rejection carries the expected failure codes.
func SelectivityGenerated(ctx context.Context, env *Env) (*SelectivityResult, error) {
	allF := append(slices.Clone(Families), FakeFamilies...)
	allM := append(slices.Clone(Metrics), FakeMetrics...)
	res, err := selectivity(ctx, env, "selectivity-generated", GeneratedContexts(), func(int) ([]string, []string) { return allF, allM })
	if err != nil {
		return nil, err
	}
	c := res.Confusion
	res.Pass = c.GroundedRejected == 0 && c.UngroundedAdmitted == 0 && c.GroundedAdmitted > 0 && res.CodesWrong == 0 && len(res.Problems) == 0
	return res, nil
}
