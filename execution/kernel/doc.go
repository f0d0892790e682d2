// Package kernel is the numerical core of the executor: the operations,
// strategy families and metrics of DOMAIN.md, as pure functions over
// []float64 series (one frame column, row-aligned with the frame's dates).
//
// Every function is deterministic: it allocates its result and never
// modifies its inputs; there is no map iteration, no goroutine, no clock and
// no randomness. NA is NaN.
//
// # Numerics
//
// Sums are plain left-to-right loops over rows (and, for the portfolio and
// for turnover, over assets in column order), never pairwise or Kahan: the
// order is part of the definition, so results are bit-for-bit reproducible
// on every platform. The pandas reference used by the differential test sums
// differently (numpy uses pairwise summation) and may differ in the last
// bits, which is why that test compares to 1e-9 relative.
//
// The Go specification lets a compiler fuse x*y + z into one fused
// multiply-add (FMA), rounding once instead of twice; the arm64, ppc64 and
// s390x compilers do, amd64 does not. That would make results depend on the
// architecture. An explicit conversion float64(x*y) forces the product to be
// rounded, so every product that feeds an addition is written that way here.
//
// Rolling statistics are computed directly over each window (two passes:
// the mean, then the squared deviations from it): O(n·w) per column, but no
// running sums that drift, and each window's result is independent of the
// rows before it. Many consecutive windows are summed in one loop, each
// with its own accumulator in the same left-to-right order, which keeps
// many additions in flight without changing a bit of any result: on amd64
// with AVX, 32 windows at a time in the lanes of eight vectors
// (window_amd64.s), elsewhere eight at a time in Go (window.go). With
// AVX-512 and FMA (windowt_amd64.s), 64 at a time: the values are first
// transposed so that every load is aligned, the means and the deviations
// of a block are computed together, and half of the additions and
// subtractions run as 1·x ± y on the FMA pipes — one rounding, the same
// bits as the plain addition. rolling_ref_test.go checks all of them against the
// one-window-at-a-time form. The elementwise steps of the families'
// plans (clip, the z-scores, sizing, the P&L sums, the checks' exposure
// figures) run four values at a time with the same IEEE operations in the
// same order (elem_amd64.s, checked by vec_test.go); -tags purego builds
// the pure Go loops alone.
// An O(n) running update would be faster for long windows but rounds
// differently; rolling_on_test.go measures by how much. Likewise Dlog's
// logarithms are math.Log's own amd64 instructions run on four values at a
// time (log_amd64.s), checked bit for bit against math.Log. Standard
// deviations are sample standard deviations, with
// n − 1 in the denominator. When every value of a window is the same, the
// mean is that value and the standard deviation exactly 0: floating-point
// summation would otherwise leave a rounding residue (0.1+0.1+0.1 ≠ 0.3), and
// a "standard deviation" of 1e-17 turns a flat market into an infinite
// z-score instead of the NA the definitions give for s = 0.
//
// ±Inf is not NA. The loader never produces it; it can only arise from an
// overflow (exp of a value above about 709.78, a product beyond 1.8e308).
//
// # Operations
//
// All run down the rows of one column; NA in gives NA out unless stated.
//
//   - Dlog and Ret use p, the most recent earlier row whose x is not NA,
//     whatever its sign. Dlog is ln x_t − ln x_p, NA if x_t or x_p ≤ 0: a
//     negative price makes both its own row and the next valid row NA (WTI,
//     2020-04-20 and -21). Ret is x_t/x_p − 1, NA if x_p = 0; negative
//     values are used as they are. Both are NA on the first valid row.
//   - Shift(k) and Diff(k) count rows, not valid values; k ≥ 0 (a negative
//     shift would look ahead and is ErrParam). Shift(0) is a copy, Diff(0)
//     is 0 where x is valid.
//   - Locf carries the last valid value forward; leading NA rows stay NA.
//   - Cs0 and Cs1 are running sums of the valid values starting from 0 and
//     1; an NA row gives NA and leaves the sum unchanged. Ecs1 is exp(Cs0).
//   - Wkd sets Saturday and Sunday rows to NA and keeps every row.
//   - Rmean(w), Rstd(w): mean and sample std of the last w valid values up
//     to and including t; NA until w valid values exist, and NA on a row
//     where x_t itself is NA (the general rule: the window skips NA rows, the
//     output does not fill them). Rmean needs w ≥ 1, Rstd w ≥ 2.
//   - Wzs(w): (x_t − m)/s with m, s over the last w valid values strictly
//     before t (no look-ahead); NA until w such values exist, where x_t is
//     NA, or where s = 0. w ≥ 2.
//   - Vnorm(w): x_t/(s·√252), s the sample std of the last w valid values
//     strictly before t; NA until w exist and where s = 0 (division by zero).
//     w ≥ 2.
//   - Clip(lo, hi) needs lo ≤ hi (neither NaN). Sign gives −1, 0 or 1 (−0
//     gives 0). Log of x ≤ 0, Sqrt of x < 0 and Inv of 0 give NA.
//   - Add, Sub, Mul, Div and the comparisons Gt, Lt, Ge, Le, Eq, Ne take two
//     aligned series (ErrLength otherwise) or a series and a scalar; ScalarSub
//     and ScalarDiv put the scalar on the left. Division by 0 (0/0 included)
//     gives NA. Comparisons give 1 or 0, NA where an input is NA; Eq is exact
//     float equality. A NaN scalar makes every row NA. Spread(a, b) is a − b.
//
// # Families
//
// Backtest is the machinery common to the four families, per asset
// (column): r = Dlog(price); σ̂_t = the sample std of the last w_r valid
// returns strictly before t, × √252 (NA until w_r exist); the weight is
// w_t = clip(sig_t·τ/σ̂_t, −L, L), NA where sig_t or σ̂_t is NA and where
// σ̂_t = 0 (division by zero); the asset's P&L on row t is w_{t−lag}·r_t,
// defined when both are. The portfolio P&L on row t is the mean of the
// assets' defined P&Ls (summed in column order), NA when none is.
// Backtest is TrailingVol then Size; the executor calls the two halves
// itself so that σ̂ is computed once for every morphism of a grid that
// shares the returns and the risk window.
//
//   - MOM_WZS: sig = clip(Wzs(Cs0(r), w_s), −1, 1), over every column.
//   - MOM_REV: sig = −clip(Wzs(Cs0(r), w_s), −1, 1): the same computation,
//     negated. Negation is exact in IEEE arithmetic and rounding is
//     symmetric, so before the leverage clip its weights are bit-for-bit
//     the negatives of MOM_WZS's, and so are its P&Ls up to the sign of a
//     zero (a portfolio sum x + (−x) is +0 either way).
//   - CARRY: sig = clip(Wzs(c, w_s), −1, 1), c = Log(front) − Log(next), NA
//     where either price is NA or ≤ 0; one asset, the front column. Front
//     and next must be two different columns of the frame.
//   - VOL_TGT: sig = +1 on every row, over every column. Its weight is
//     therefore defined wherever σ̂ is, including rows whose own return is
//     NA (a holiday, the row of a negative price).
//
// Params: Window ≥ 2 (not used by VOL_TGT), RiskWindow ≥ 2, Leverage and
// TargetVol finite and > 0, Lag ≥ 1 (counted in rows).
//
// # Metrics
//
// A grid of morphisms is scored over a common evaluation window: CommonStart
// finds the first row on which every morphism's portfolio P&L is defined
// (−1 when there is none: every score is then NA); the window runs from
// there to the last row. Inside it each metric uses that morphism's rows
// where its P&L is defined and skips the others. Over those n values:
//
//   - SRP = mean/sd × √252; NA when n < 2 or sd = 0.
//   - MDD = max over t of 1 − E_t/max_{s≤t} E_s, E_t = exp(cumulative sum
//     of the P&L from the window's first row through t). The running peak
//     starts at E of the first row; there is no implicit E = 1 before it, so
//     a loss on the first row is not a drawdown. 0 when E never drops; NA
//     when n = 0.
//   - ARET = mean × 252; AVOL = sd × √252 (NA when n < 2; 0 for a constant
//     P&L); TRET = Σ pnl. NA when n = 0.
//   - SRT = mean/√mean(min(pnl, 0)²) × √252, the downside mean taken over
//     all n rows; NA when no row is negative (the denominator is 0).
//   - CLM = ARET/MDD; NA when MDD is 0 or NA.
//   - HIT = #(pnl > 0)/#(pnl ≠ 0); NA when no row is nonzero.
//   - TRN = the mean, over the same rows, of Σ_assets |w_t − w_{t−1}| with
//     NA weights counted as 0 and w_{−1} = 0; t − 1 is the previous row of
//     the frame, whether or not it is in the window or has a P&L.
//     Turnover gives the per-row sums, so a caller can keep them and drop
//     the weights; TRNOf averages them as TRN does.
//
// SRP, ARET, SRT, CLM, HIT and TRET are better higher; MDD, AVOL and TRN
// lower. Best picks the best score in the metric's direction; NA never wins;
// ties go to the earlier morphism.
package kernel
