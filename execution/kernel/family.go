package kernel

import (
	"fmt"
	"math"

	"github.com/groundgate/groundgate/execution/frame"
)

// Families lists the family names RunFamily knows, in DOMAIN.md order.
func Families() []string { return []string{"MOM_WZS", "MOM_REV", "CARRY", "VOL_TGT"} }

// Params are a family's parameters. The JSON names are DOMAIN.md's.
type Params struct {
	Window     int     `json:"window"`      // signal window w_s, ≥ 2 (unused by VOL_TGT)
	RiskWindow int     `json:"risk_window"` // w_r, ≥ 2
	Leverage   float64 `json:"leverage"`    // cap L on |weight|, > 0
	TargetVol  float64 `json:"target_vol"`  // τ, annualised, > 0
	Lag        int     `json:"lag"`         // execution lag in rows, ≥ 1
	Front      string  `json:"front"`       // CARRY: the front contract column, traded
	Next       string  `json:"next"`        // CARRY: the next contract column
}

// DefaultParams returns DOMAIN.md's defaults: risk window 60, leverage 1,
// target volatility 0.10, lag 1, front C1, next C2. Window has no default
// and is left 0; set it before running a family that uses it.
func DefaultParams() Params {
	return Params{RiskWindow: 60, Leverage: 1, TargetVol: 0.10, Lag: 1, Front: "C1", Next: "C2"}
}

// validate checks the parameters Backtest uses.
func (p Params) validate() error {
	switch {
	case p.RiskWindow < 2:
		return fmt.Errorf("kernel: risk_window %d: %w: must be ≥ 2", p.RiskWindow, ErrParam)
	case !(p.Leverage > 0) || math.IsInf(p.Leverage, 0):
		return fmt.Errorf("kernel: leverage %g: %w: must be finite and > 0", p.Leverage, ErrParam)
	case !(p.TargetVol > 0) || math.IsInf(p.TargetVol, 0):
		return fmt.Errorf("kernel: target_vol %g: %w: must be finite and > 0", p.TargetVol, ErrParam)
	case p.Lag < 1:
		return fmt.Errorf("kernel: lag %d: %w: must be ≥ 1", p.Lag, ErrParam)
	}
	return nil
}

func (p Params) validateWindow() error {
	if p.Window < 2 {
		return fmt.Errorf("kernel: window %d: %w: must be ≥ 2", p.Window, ErrParam)
	}
	return nil
}

// Result is the output of a family run. Every series is row-aligned with
// the frame.
type Result struct {
	Assets  []string    // the traded columns, in frame order
	Weights [][]float64 // Weights[a][t]: asset a's weight decided on row t
	PnL     []float64   // the portfolio P&L (log return) per row
}

// Backtest is the machinery shared by the families. prices[a] is asset a's
// traded price series and signals[a] its signal sig; all must have the same
// length. It returns each asset's weights and the portfolio P&L (see the
// package documentation); Result.Assets is left nil for the caller to name.
func Backtest(prices, signals [][]float64, p Params) (Result, error) {
	if err := p.validate(); err != nil {
		return Result{}, err
	}
	if err := checkShape(prices, signals); err != nil {
		return Result{}, err
	}
	returns := make([][]float64, len(prices))
	vols := make([][]float64, len(prices))
	for a, price := range prices {
		returns[a] = Dlog(price)
		vols[a] = trailingVol(returns[a], p.RiskWindow)
	}
	return size(nil, returns, signals, vols, p), nil
}

// Size is the second half of Backtest, for callers that compute the
// returns r = Dlog(price) and the trailing volatilities σ̂ =
// TrailingVol(r, p.RiskWindow) themselves (the executor shares them between
// the morphisms of a grid). Given the same inputs it returns bit for bit
// what Backtest returns. p.RiskWindow is not used.
func Size(returns, signals, vols [][]float64, p Params) (Result, error) {
	return SizeInto(nil, returns, signals, vols, p)
}

// SizeInto is Size writing asset a's weights into weights[a] (as long as
// its returns) instead of allocating them; weights nil allocates.
func SizeInto(weights, returns, signals, vols [][]float64, p Params) (Result, error) {
	q := p
	q.RiskWindow = 2 // not used here; keep validate from refusing it
	if err := q.validate(); err != nil {
		return Result{}, err
	}
	if err := checkShape(returns, signals); err != nil {
		return Result{}, err
	}
	if len(vols) != len(returns) {
		return Result{}, fmt.Errorf("kernel: size: %d volatility series for %d assets: %w", len(vols), len(returns), ErrLength)
	}
	for a := range vols {
		if len(vols[a]) != len(returns[a]) {
			return Result{}, fmt.Errorf("kernel: size: asset %d: %d volatilities for %d rows: %w", a, len(vols[a]), len(returns[a]), ErrLength)
		}
	}
	if weights != nil {
		if err := checkInto("size", weights, returns); err != nil {
			return Result{}, err
		}
	}
	return size(weights, returns, signals, vols, p), nil
}

// TrailingVol returns σ̂_t: the sample standard deviation of the last w
// valid values of r strictly before t, × √252; NA until w exist. w ≥ 2.
func TrailingVol(r []float64, w int) ([]float64, error) {
	if err := checkWindow("trailing vol", w, 2); err != nil {
		return nil, err
	}
	return trailingVol(r, w), nil
}

func checkShape(prices, signals [][]float64) error {
	if len(prices) == 0 {
		return fmt.Errorf("kernel: backtest: no asset: %w", ErrColumn)
	}
	if len(signals) != len(prices) {
		return fmt.Errorf("kernel: backtest: %d signals for %d assets: %w", len(signals), len(prices), ErrLength)
	}
	n := len(prices[0])
	for a := range prices {
		if len(prices[a]) != n || len(signals[a]) != n {
			return fmt.Errorf("kernel: backtest: asset %d: %d prices and %d signals for %d rows: %w",
				a, len(prices[a]), len(signals[a]), n, ErrLength)
		}
	}
	return nil
}

// size computes the weights and the portfolio P&L from checked inputs.
// The P&L sums take the assets in column order, row by row. The rows go
// sizeRows at a time, so that the sums and counts stay on the stack and in
// the cache.
func size(into [][]float64, returns, signals, vols [][]float64, p Params) Result {
	n := len(returns[0])
	weights := make([][]float64, len(returns))
	for a := range weights {
		if into != nil {
			weights[a] = into[a][:n]
		} else {
			weights[a] = make([]float64, n)
		}
	}
	pnl := make([]float64, n)
	tau, lo, hi, lag := p.TargetVol, -p.Leverage, p.Leverage, p.Lag
	var sumBuf, countBuf [sizeRows]float64
	for t0 := 0; t0 < n; t0 += sizeRows {
		t1 := min(n, t0+sizeRows)
		sum, count := sumBuf[:t1-t0], countBuf[:t1-t0] // count: small whole numbers, exact
		clear(sum)
		clear(count)
		for a, r := range returns {
			w := weights[a]
			sizeWeights(w[t0:t1], signals[a][t0:t1], vols[a][t0:t1], tau, lo, hi)
			// Row t's P&L takes the weight of row t − lag: decided by now.
			if s := max(t0, lag); s < t1 {
				pnlAdd(w[s-lag:t1-lag], r[s:t1], sum[s-t0:], count[s-t0:])
			}
		}
		for t, c := range count {
			if c > 0 {
				pnl[t0+t] = sum[t] / c
			} else {
				pnl[t0+t] = nan
			}
		}
	}
	return Result{Weights: weights, PnL: pnl}
}

// sizeRows is how many rows size takes at a time.
const sizeRows = 1024

// sizeWeights sets w[t] = clip(sig[t]·τ/vol[t], lo, hi), NA where sig[t]
// or vol[t] is NA or vol[t] = 0. Branch-light: every row computes its
// weight, the rows without one are set to NA after.
func sizeWeights(w, sig, vol []float64, tau, lo, hi float64) {
	sig, vol = sig[:len(w)], vol[:len(w)]
	for t := sizeVec(sig, vol, tau, lo, hi, w); t < len(w); t++ {
		s, v := sig[t], vol[t]
		x := s * tau / v
		c := min(max(x, lo), hi) // clip1(x, lo, hi) for a non-NaN x: lo < 0 < hi
		if isNA(x) {             // Inf/Inf: kept as it is, as clip1 keeps it
			c = x
		}
		if isNA(s) || isNA(v) || v == 0 {
			c = nan
		}
		w[t] = c
	}
}

// pnlAdd adds w[t]·r[t] to sum[t] and 1 to count[t] where neither w[t]
// nor r[t] is NA (the rows of r and sum are the weights' rows plus the
// lag).
func pnlAdd(w, r, sum, count []float64) {
	r, sum, count = r[:len(w)], sum[:len(w)], count[:len(w)]
	for t := pnlAddVec(w, r, sum, count); t < len(w); t++ {
		x, y := w[t], r[t]
		if isNA(x) || isNA(y) {
			continue
		}
		sum[t] += float64(x * y) // explicit conversion: no FMA
		count[t]++
	}
}

// backtestNamed runs Backtest and names the assets.
func backtestNamed(assets []string, prices, signals [][]float64, p Params) (Result, error) {
	res, err := Backtest(prices, signals, p)
	if err != nil {
		return Result{}, err
	}
	res.Assets = append([]string(nil), assets...)
	return res, nil
}

// columns returns every column of f, checking there is at least one.
func columns(f *frame.Frame) ([][]float64, error) {
	if f.Width() == 0 {
		return nil, fmt.Errorf("kernel: the frame has no column: %w", ErrColumn)
	}
	cols := make([][]float64, f.Width())
	for j := range cols {
		cols[j] = f.Column(j)
	}
	return cols, nil
}

// momentumSignal is clip(wzs(cs0(dlog(price)), w), −1, 1).
func momentumSignal(price []float64, w int) []float64 {
	z, _ := Wzs(Cs0(Dlog(price)), w) // w validated by the caller
	return clip(z, -1, 1)
}

func momentum(f *frame.Frame, p Params, reverse bool) (Result, error) {
	if err := p.validateWindow(); err != nil {
		return Result{}, err
	}
	prices, err := columns(f)
	if err != nil {
		return Result{}, err
	}
	signals := make([][]float64, len(prices))
	for a, price := range prices {
		signals[a] = momentumSignal(price, p.Window)
		if reverse {
			signals[a] = Neg(signals[a])
		}
	}
	return backtestNamed(f.Names(), prices, signals, p)
}

// MomWZS runs MOM_WZS on every column of f: sig = clip(wzs(cs0(r), w_s),
// −1, 1), long what has been rising.
func MomWZS(f *frame.Frame, p Params) (Result, error) { return momentum(f, p, false) }

// MomRev runs MOM_REV on every column of f: sig = −clip(wzs(cs0(r), w_s),
// −1, 1), the same machinery as MOM_WZS with the opposite bet.
func MomRev(f *frame.Frame, p Params) (Result, error) { return momentum(f, p, true) }

// Carry runs CARRY: sig = clip(wzs(c, w_s), −1, 1) with the roll yield
// c = ln F_front − ln F_next, traded on the front column.
func Carry(f *frame.Frame, p Params) (Result, error) {
	if err := p.validateWindow(); err != nil {
		return Result{}, err
	}
	if p.Front == p.Next {
		return Result{}, fmt.Errorf("kernel: carry: front and next are both %q: %w", p.Front, ErrParam)
	}
	front, ok := f.Lookup(p.Front)
	if !ok {
		return Result{}, fmt.Errorf("kernel: carry: front column %q: %w", p.Front, ErrColumn)
	}
	next, ok := f.Lookup(p.Next)
	if !ok {
		return Result{}, fmt.Errorf("kernel: carry: next column %q: %w", p.Next, ErrColumn)
	}
	c, _ := Sub(Log(front), Log(next)) // same frame: same length
	z, _ := Wzs(c, p.Window)
	return backtestNamed([]string{p.Front}, [][]float64{front}, [][]float64{clip(z, -1, 1)}, p)
}

// VolTgt runs VOL_TGT on every column of f: sig = +1 on every row, long,
// sized to the target volatility.
func VolTgt(f *frame.Frame, p Params) (Result, error) {
	prices, err := columns(f)
	if err != nil {
		return Result{}, err
	}
	signals := make([][]float64, len(prices))
	for a := range signals {
		signals[a] = make([]float64, f.Len())
		for t := range signals[a] {
			signals[a][t] = 1
		}
	}
	return backtestNamed(f.Names(), prices, signals, p)
}

// RunFamily runs the named family (ErrUnknown for another name).
func RunFamily(name string, f *frame.Frame, p Params) (Result, error) {
	switch name {
	case "MOM_WZS":
		return MomWZS(f, p)
	case "MOM_REV":
		return MomRev(f, p)
	case "CARRY":
		return Carry(f, p)
	case "VOL_TGT":
		return VolTgt(f, p)
	}
	return Result{}, fmt.Errorf("kernel: family %q: %w", name, ErrUnknown)
}
