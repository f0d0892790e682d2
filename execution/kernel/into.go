package kernel

import "fmt"

// The Into forms write a kernel's result into out, a series the caller
// owns, instead of allocating it: the executor recycles series between the
// nodes of a plan. out must be as long as the input (ErrLength); every
// element of it is written, bit for bit what the allocating form returns.

func checkOut(op string, out, x []float64) error {
	if len(out) != len(x) {
		return fmt.Errorf("kernel: %s: %d rows to write for %d rows: %w", op, len(out), len(x), ErrLength)
	}
	return nil
}

func checkInto(op string, out, x [][]float64) error {
	if len(out) != len(x) {
		return fmt.Errorf("kernel: %s: %d series to write for %d: %w", op, len(out), len(x), ErrLength)
	}
	for a := range out {
		if err := checkOut(op, out[a], x[a]); err != nil {
			return err
		}
	}
	return nil
}

// DlogInto is Dlog into out.
func DlogInto(out, x []float64) error {
	if err := checkOut("dlog", out, x); err != nil {
		return err
	}
	dlogInto(out, x)
	return nil
}

// Cs0Into is Cs0 into out.
func Cs0Into(out, x []float64) error {
	if err := checkOut("cs0", out, x); err != nil {
		return err
	}
	cumsumInto(out, x, 0)
	return nil
}

// ClipInto is Clip into out.
func ClipInto(out, x []float64, lo, hi float64) error {
	if !(lo <= hi) {
		return fmt.Errorf("kernel: clip %g %g: %w: need lo ≤ hi", lo, hi, ErrParam)
	}
	if err := checkOut("clip", out, x); err != nil {
		return err
	}
	clipInto(out, x, lo, hi)
	return nil
}

// rollingOp checks a windowed kernel's window and output, then runs it.
func rollingOp(op string, min int, kind rollKind, out, x []float64, w int) error {
	if err := checkWindow(op, w, min); err != nil {
		return err
	}
	if err := checkOut(op, out, x); err != nil {
		return err
	}
	rollingInto(out, x, w, kind)
	return nil
}

// RmeanInto is Rmean into out.
func RmeanInto(out, x []float64, w int) error { return rollingOp("rmean", 1, rollMean, out, x, w) }

// RstdInto is Rstd into out.
func RstdInto(out, x []float64, w int) error { return rollingOp("rstd", 2, rollStd, out, x, w) }

// WzsInto is Wzs into out.
func WzsInto(out, x []float64, w int) error { return rollingOp("wzs", 2, rollWzs, out, x, w) }

// VnormInto is Vnorm into out.
func VnormInto(out, x []float64, w int) error { return rollingOp("vnorm", 2, rollVnorm, out, x, w) }

// TrailingVolInto is TrailingVol into out.
func TrailingVolInto(out, r []float64, w int) error {
	return rollingOp("trailing vol", 2, rollVol, out, r, w)
}
