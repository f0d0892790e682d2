//go:build !purego

#include "go_asm.h"
#include "textflag.h"

// Elementwise loops of the families' plans on four values at a time, with
// the IEEE operations the Go loops use, in the same order, each rounded
// once: every lane is bit for bit the Go loop's value. NA written is the
// package's nan (math.NaN()'s bits), as the Go loops write it.

DATA elemNaN<>+0(SB)/8, $0x7FF8000000000001
GLOBL elemNaN<>(SB), RODATA|NOPTR, $8
DATA elemOne<>+0(SB)/8, $1.0
GLOBL elemOne<>(SB), RODATA|NOPTR, $8
DATA elemZeros<>+0(SB)/8, $0
DATA elemZeros<>+8(SB)/8, $0
DATA elemZeros<>+16(SB)/8, $0
DATA elemZeros<>+24(SB)/8, $0
GLOBL elemZeros<>(SB), RODATA|NOPTR, $32

// func scoresAVX(next, mean *float64, std *float64, k float64, quads int, out *float64)
// out = (next − mean) / (std · k); NA where std = 0. The z-scores of wzs
// (k = 1: std·1 is std) and, with mean nil for +0 throughout (next − 0 is
// next, −0 included), vnorm's next / (std·√252).
TEXT ·scoresAVX(SB), NOSPLIT, $0-48
	MOVQ         next+0(FP), SI
	MOVQ         mean+8(FP), R8
	MOVQ         $32, R10          // mean's step
	MOVQ         std+16(FP), R9
	VBROADCASTSD k+24(FP), Y13
	MOVQ         quads+32(FP), CX
	MOVQ         out+40(FP), DI
	VBROADCASTSD elemNaN<>(SB), Y15
	VXORPD       Y14, Y14, Y14
	TESTQ        R8, R8
	JNZ          zLoop
	LEAQ         elemZeros<>(SB), R8
	XORQ         R10, R10

zLoop:
	VMOVUPD   0(R9), Y1
	VMULPD    Y13, Y1, Y3
	VMOVUPD   0(SI), Y0
	VSUBPD    0(R8), Y0, Y0
	VDIVPD    Y3, Y0, Y0
	VCMPPD    $0, Y14, Y1, Y2  // std == 0
	VBLENDVPD Y2, Y15, Y0, Y0
	VMOVUPD   Y0, 0(DI)
	ADDQ      $32, SI
	ADDQ      R10, R8
	ADDQ      $32, R9
	ADDQ      $32, DI
	DECQ      CX
	JNZ       zLoop
	VZEROUPPER
	RET

// func clipAVX(x *float64, quads int, lo, hi float64, out *float64)
// out = min(max(x, lo), hi); NA where x is NA. lo < 0 < hi: no zero is
// compared with a zero bound.
TEXT ·clipAVX(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         quads+8(FP), CX
	VBROADCASTSD lo+16(FP), Y12
	VBROADCASTSD hi+24(FP), Y13
	MOVQ         out+32(FP), DI
	VBROADCASTSD elemNaN<>(SB), Y15

cLoop:
	VMOVUPD   0(SI), Y0
	VMAXPD    Y0, Y12, Y1      // max(lo, x)
	VMINPD    Y1, Y13, Y1      // min(hi, ·)
	VCMPPD    $3, Y0, Y0, Y2   // x is NaN
	VBLENDVPD Y2, Y15, Y1, Y1
	VMOVUPD   Y1, 0(DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       cLoop
	VZEROUPPER
	RET

// func sizeAVX(sig, vol *float64, quads int, tau, lo, hi float64, w *float64)
// w = clip(sig·τ/vol, lo, hi) (a NaN quotient kept as it is); NA where sig
// or vol is NA or vol = 0. lo < 0 < hi.
TEXT ·sizeAVX(SB), NOSPLIT, $0-56
	MOVQ         sig+0(FP), SI
	MOVQ         vol+8(FP), R8
	MOVQ         quads+16(FP), CX
	VBROADCASTSD tau+24(FP), Y11
	VBROADCASTSD lo+32(FP), Y12
	VBROADCASTSD hi+40(FP), Y13
	MOVQ         w+48(FP), DI
	VBROADCASTSD elemNaN<>(SB), Y15
	VXORPD       Y14, Y14, Y14

sLoop:
	VMOVUPD   0(SI), Y0        // s
	VMOVUPD   0(R8), Y1        // v
	VMULPD    Y11, Y0, Y2      // s·τ
	VDIVPD    Y1, Y2, Y2       // x = s·τ/v
	VMAXPD    Y2, Y12, Y3      // max(lo, x); x if x is NaN
	VMINPD    Y3, Y13, Y3      // min(hi, ·)
	VCMPPD    $3, Y0, Y0, Y4   // s is NaN
	VCMPPD    $3, Y1, Y1, Y5   // v is NaN
	VCMPPD    $0, Y14, Y1, Y6  // v == 0
	VORPD     Y5, Y4, Y4
	VORPD     Y6, Y4, Y4
	VBLENDVPD Y4, Y15, Y3, Y3
	VMOVUPD   Y3, 0(DI)
	ADDQ      $32, SI
	ADDQ      $32, R8
	ADDQ      $32, DI
	DECQ      CX
	JNZ       sLoop
	VZEROUPPER
	RET

// func pnlAddAVX(w, r *float64, quads int, sum, count *float64)
// Where neither w nor r is NA: sum += w·r, count += 1.
TEXT ·pnlAddAVX(SB), NOSPLIT, $0-40
	MOVQ         w+0(FP), SI
	MOVQ         r+8(FP), R8
	MOVQ         quads+16(FP), CX
	MOVQ         sum+24(FP), DI
	MOVQ         count+32(FP), R9
	VBROADCASTSD elemOne<>(SB), Y15

pLoop:
	VMOVUPD   0(SI), Y0
	VMOVUPD   0(R8), Y1
	VMULPD    Y1, Y0, Y2       // w·r, rounded
	VCMPPD    $7, Y1, Y0, Y3   // neither is NaN
	VMOVUPD   0(DI), Y4
	VADDPD    Y2, Y4, Y5
	VBLENDVPD Y3, Y5, Y4, Y4
	VMOVUPD   Y4, 0(DI)
	VANDPD    Y15, Y3, Y6
	VADDPD    0(R9), Y6, Y6
	VMOVUPD   Y6, 0(R9)
	ADDQ      $32, SI
	ADDQ      $32, R8
	ADDQ      $32, DI
	ADDQ      $32, R9
	DECQ      CX
	JNZ       pLoop
	VZEROUPPER
	RET

// func firstRepeatAVX(v *float64, quads int) int
// The first i in 1 … 4·quads with v[i] == v[i−1], or 0.
TEXT ·firstRepeatAVX(SB), NOSPLIT, $0-24
	MOVQ v+0(FP), SI
	MOVQ quads+8(FP), CX
	XORQ DX, DX

rLoop:
	VMOVUPD   8(SI)(DX*8), Y0  // v[i+1 … i+4]
	VCMPPD    $0, 0(SI)(DX*8), Y0, Y1
	VMOVMSKPD Y1, AX
	TESTL     AX, AX
	JNZ       rFound
	ADDQ      $4, DX
	DECQ      CX
	JNZ       rLoop
	MOVQ      $0, ret+16(FP)
	VZEROUPPER
	RET

rFound:
	BSFL AX, AX
	LEAQ 1(DX)(AX*1), AX
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

DATA elemAbs<>+0(SB)/8, $0x7FFFFFFFFFFFFFFF
GLOBL elemAbs<>(SB), RODATA|NOPTR, $8
DATA elemInf<>+0(SB)/8, $0x7FF0000000000000
GLOBL elemInf<>(SB), RODATA|NOPTR, $8

// func exposureAVX(w *float64, quads int, gross *float64, e *Exposure)
// For t in 1 … 4·quads, with z_t = w_t or 0 where w_t is NA: gross[t] +=
// |z_t|; e.MaxAbs = max(e.MaxAbs, |z_t|); e.Moved += |z_t − z_{t−1}| in
// row order, each addition rounded; e.Defined and e.Finite count the
// defined and the finite w_t.
TEXT ·exposureAVX(SB), NOSPLIT, $0-32
	MOVQ         w+0(FP), SI
	MOVQ         quads+8(FP), CX
	MOVQ         gross+16(FP), DI
	MOVQ         e+24(FP), R8
	VBROADCASTSD elemAbs<>(SB), Y15
	VBROADCASTSD elemInf<>(SB), Y14
	VBROADCASTSD Exposure_MaxAbs(R8), Y13
	VMOVSD       Exposure_Moved(R8), X12
	VPXOR        Y11, Y11, Y11    // defined, per lane
	VPXOR        Y10, Y10, Y10    // finite, per lane

eLoop:
	VMOVUPD   8(SI), Y0        // w[t … t+3]
	VMOVUPD   0(SI), Y1        // w[t−1 … t+2]
	VCMPPD    $7, Y0, Y0, Y2   // w_t defined
	VCMPPD    $7, Y1, Y1, Y3
	VANDPD    Y2, Y0, Y0       // z_t
	VANDPD    Y3, Y1, Y1       // z_{t−1}
	VANDPD    Y15, Y0, Y4      // |z_t|
	VADDPD    8(DI), Y4, Y5
	VMOVUPD   Y5, 8(DI)
	VMAXPD    Y13, Y4, Y13
	VCMPPD    $12, Y14, Y4, Y6 // |z_t| ≠ ∞
	VANDPD    Y2, Y6, Y6
	VPSUBQ    Y2, Y11, Y11     // a true lane is −1
	VPSUBQ    Y6, Y10, Y10
	VSUBPD    Y1, Y0, Y7
	VANDPD    Y15, Y7, Y7      // |z_t − z_{t−1}|
	VEXTRACTF128 $1, Y7, X8
	VADDSD    X7, X12, X12
	VPERMILPD $1, X7, X9
	VADDSD    X9, X12, X12
	VADDSD    X8, X12, X12
	VPERMILPD $1, X8, X9
	VADDSD    X9, X12, X12
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       eLoop

	VEXTRACTF128 $1, Y13, X0   // the largest of the four lanes
	VMAXPD       X0, X13, X0
	VPERMILPD    $1, X0, X1
	VMAXSD       X1, X0, X0
	VMOVSD       X0, Exposure_MaxAbs(R8)
	VMOVSD       X12, Exposure_Moved(R8)
	VEXTRACTI128 $1, Y11, X0   // the four lanes' counts
	VPADDQ       X0, X11, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDQ       X1, X0, X0
	VMOVQ        X0, AX
	ADDQ         AX, Exposure_Defined(R8)
	VEXTRACTI128 $1, Y10, X0
	VPADDQ       X0, X10, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDQ       X1, X0, X0
	VMOVQ        X0, AX
	ADDQ         AX, Exposure_Finite(R8)
	VZEROUPPER
	RET


// func rangeAVX(x *float64, quads int, lohi *[2]float64)
// lohi = (min, max) of lohi (not NaN) and the defined values of
// x[0 : 4·quads]. VMINPD and VMAXPD give their second source operand when
// either is NaN: with the running bound there, an NA is passed over.
TEXT ·rangeAVX(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), SI
	MOVQ         quads+8(FP), CX
	MOVQ         lohi+16(FP), DI
	VBROADCASTSD 0(DI), Y12
	VBROADCASTSD 8(DI), Y13

gLoop:
	VMOVUPD   0(SI), Y0
	VMINPD    Y12, Y0, Y12     // min(x, lo); lo where x is NA
	VMAXPD    Y13, Y0, Y13
	ADDQ      $32, SI
	DECQ      CX
	JNZ       gLoop

	VEXTRACTF128 $1, Y12, X0
	VMINPD       X0, X12, X0
	VPERMILPD    $1, X0, X1
	VMINSD       X1, X0, X0
	VMOVSD       X0, 0(DI)
	VEXTRACTF128 $1, Y13, X0
	VMAXPD       X0, X13, X0
	VPERMILPD    $1, X0, X1
	VMAXSD       X1, X0, X0
	VMOVSD       X0, 8(DI)
	VZEROUPPER
	RET

// func naRowsAVX(x *float64, quads int, rows *int, room int) (found, looked int)
// Appends to rows the index of every NaN of x[0 : 4·quads], in order,
// while there is room for a whole quad's (four); looked is how many values
// it read. Eight values a time are tested at once: NaNs are rare.
TEXT ·naRowsAVX(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ quads+8(FP), CX
	MOVQ rows+16(FP), DI
	MOVQ room+24(FP), R8
	SUBQ $4, R8                // found may not pass room − 4 before a quad
	XORQ DX, DX                // the quad's first index
	XORQ R9, R9                // found

naPairs:
	CMPQ      CX, $2
	JLT       naLoop
	VMOVUPD   0(SI)(DX*8), Y0
	VMOVUPD   32(SI)(DX*8), Y2
	VCMPPD    $3, Y0, Y0, Y1
	VCMPPD    $3, Y2, Y2, Y3
	VORPD     Y3, Y1, Y3
	VPTEST    Y3, Y3
	JNZ       naLoop           // one of the two has a NaN: a quad at a time
	ADDQ      $8, DX
	SUBQ      $2, CX
	JNZ       naPairs
	JMP       naDone

naLoop:
	VMOVUPD   0(SI)(DX*8), Y0
	VCMPPD    $3, Y0, Y0, Y1
	VMOVMSKPD Y1, AX
	TESTL     AX, AX
	JNZ       naSome

naNext:
	ADDQ $4, DX
	DECQ CX
	JNZ  naPairs

naDone:
	MOVQ R9, found+32(FP)
	MOVQ DX, looked+40(FP)
	VZEROUPPER
	RET

naSome:
	CMPQ R9, R8
	JGT  naDone                // no room left for this quad's NaNs

naBit:
	BSFL AX, BX
	LEAQ 0(DX)(BX*1), R10
	MOVQ R10, 0(DI)(R9*8)
	INCQ R9
	LEAL -1(AX), BX
	ANDL BX, AX                // the next lowest bit
	JNZ  naBit
	JMP  naNext

// func dlogDiffAVX(x *float64, quads int, l *float64) (inf int)
// In place, for t in 1 … 4·quads: l[t] = l[t] − l[t−1] where x[t] and
// x[t−1] are positive, NA elsewhere; l holds ln x on entry. inf is not 0
// when x[0 : 4·quads+1] holds +Inf (whose l is not its logarithm): then
// nothing of it stands. The log of the row
// before a quad is carried in a register: the quad before has been
// overwritten.
TEXT ·dlogDiffAVX(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         quads+8(FP), CX
	MOVQ         l+16(FP), DI
	VBROADCASTSD elemNaN<>(SB), Y15
	VBROADCASTSD elemInf<>(SB), Y13
	VXORPD       Y12, Y12, Y12
	VXORPD       Y11, Y11, Y11     // +Inf seen
	VBROADCASTSD 0(DI), Y10        // l[t−1] in every lane

dLoop:
	VMOVUPD   8(DI), Y0            // l[t … t+3]
	VPERMPD   $0x93, Y0, Y1        // l[t+3], l[t], l[t+1], l[t+2]
	VBLENDPD  $1, Y10, Y1, Y1      // l[t−1 … t+2]
	VPERMPD   $0xff, Y0, Y10       // l[t+3] for the next quad
	VSUBPD    Y1, Y0, Y0
	VMOVUPD   8(SI), Y2            // x[t … t+3]
	VMOVUPD   0(SI), Y3            // x[t−1 … t+2]
	VCMPPD    $0x1e, Y12, Y2, Y4   // x > 0 (and finite, or inf says so)
	VCMPPD    $0x1e, Y12, Y3, Y5
	VANDPD    Y5, Y4, Y4
	VBLENDVPD Y4, Y0, Y15, Y0      // the difference where all hold, else NA
	VMOVUPD   Y0, 8(DI)
	VCMPPD    $0, Y13, Y2, Y5      // x == +Inf
	VORPD     Y5, Y11, Y11
	VCMPPD    $0, Y13, Y3, Y5
	VORPD     Y5, Y11, Y11
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       dLoop
	VMOVMSKPD Y11, AX
	MOVQ      AX, inf+24(FP)
	VZEROUPPER
	RET
