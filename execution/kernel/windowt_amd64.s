//go:build !purego

#include "textflag.h"

// The window loops of window.go with AVX-512 and FMA, 64 windows at a
// time. The values are first transposed: T[i] holds v[i], v[i+8], …,
// v[i+56], so that lane k of accumulator j, summing T[j], T[j+1], …, sums
// window j + 8k left to right from +0, and every load is aligned (the
// unaligned loads of window_amd64.s split cache lines). The means and the
// deviations of a block are computed together. Every operation is the one
// the scalar loops use, rounded once; half of the additions and
// subtractions are written 1·x + y and 1·x − y, run on the FMA pipes:
// with an exact product, one rounding, the same bits.

DATA onef64<>+0(SB)/8, $1.0
GLOBL onef64<>(SB), RODATA|NOPTR, $8

// TRANSPOSE8 sets t_c to column c of the 8×8 matrix whose rows are a0…a7
// (t_c lane k = a_k lane c), using u0…u3; the a are left as they are.
#define TRANSPOSE8(a0, a1, a2, a3, a4, a5, a6, a7, t0, t1, t2, t3, t4, t5, t6, t7, u0, u1, u2, u3) \
	VUNPCKLPD  a1, a0, t0 \
	VUNPCKHPD  a1, a0, t1 \
	VUNPCKLPD  a3, a2, t2 \
	VUNPCKHPD  a3, a2, t3 \
	VUNPCKLPD  a5, a4, t4 \
	VUNPCKHPD  a5, a4, t5 \
	VUNPCKLPD  a7, a6, t6 \
	VUNPCKHPD  a7, a6, t7 \
	VSHUFF64X2 $0x88, t2, t0, u0 \
	VSHUFF64X2 $0xdd, t2, t0, u1 \
	VSHUFF64X2 $0x88, t6, t4, u2 \
	VSHUFF64X2 $0xdd, t6, t4, u3 \
	VSHUFF64X2 $0x88, u2, u0, t0 \
	VSHUFF64X2 $0xdd, u2, u0, t4 \
	VSHUFF64X2 $0x88, u3, u1, t2 \
	VSHUFF64X2 $0xdd, u3, u1, t6 \
	VSHUFF64X2 $0x88, t3, t1, u0 \
	VSHUFF64X2 $0xdd, t3, t1, u1 \
	VSHUFF64X2 $0x88, t7, t5, u2 \
	VSHUFF64X2 $0xdd, t7, t5, u3 \
	VSHUFF64X2 $0x88, u2, u0, t1 \
	VSHUFF64X2 $0xdd, u2, u0, t5 \
	VSHUFF64X2 $0x88, u3, u1, t3 \
	VSHUFF64X2 $0xdd, u3, u1, t7

// STORE64 stores the 64 windows of a block, lane k of a_j being window
// j + 8k, in window order at 0(base), using Z8…Z15 and Z27…Z30.
#define STORE64(a0, a1, a2, a3, a4, a5, a6, a7, base) \
	TRANSPOSE8(a0, a1, a2, a3, a4, a5, a6, a7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z27, Z28, Z29, Z30) \
	VMOVUPD Z8, 0(base) \
	VMOVUPD Z9, 64(base) \
	VMOVUPD Z10, 128(base) \
	VMOVUPD Z11, 192(base) \
	VMOVUPD Z12, 256(base) \
	VMOVUPD Z13, 320(base) \
	VMOVUPD Z14, 384(base) \
	VMOVUPD Z15, 448(base)

// NEXTT turns T[i], in z, into T[i+8]: lanes 1…7 of T[i], then v[i+64],
// read at off(AX).
#define NEXTT(off, z) \
	VBROADCASTSD off(AX), Z30 \
	VALIGNQ      $1, z, Z30, z

// ZERO8 clears the eight accumulators.
#define ZERO8 \
	VXORPD Z0, Z0, Z0 \
	VXORPD Z1, Z1, Z1 \
	VXORPD Z2, Z2, Z2 \
	VXORPD Z3, Z3, Z3 \
	VXORPD Z4, Z4, Z4 \
	VXORPD Z5, Z5, Z5 \
	VXORPD Z6, Z6, Z6 \
	VXORPD Z7, Z7, Z7

// One step of the sum loop: acc_j += r_j (half of the additions as
// 1·r_j + acc_j on the FMA pipes: the same single rounding), then the
// register of this step takes the vector eight steps ahead.
#define SUMSTEP(r0, r1, r2, r3, r4, r5, r6, r7, off) \
	VADDPD      r0, Z0, Z0 \
	VFMADD231PD r1, Z24, Z1 \
	VADDPD      r2, Z2, Z2 \
	VFMADD231PD r3, Z24, Z3 \
	VADDPD      r4, Z4, Z4 \
	VFMADD231PD r5, Z24, Z5 \
	VADDPD      r6, Z6, Z6 \
	VFMADD231PD r7, Z24, Z7 \
	VMOVAPD     off(AX), r0 \
	DECQ        BX \
	JZ          sumDone

// func windowStatsT(v *float64, w, blocks int, fw, fw1 float64, mean, std, t *float64)
TEXT ·windowStatsT(SB), NOSPLIT, $0-64
	MOVQ v+0(FP), SI
	MOVQ w+8(FP), CX
	MOVQ blocks+16(FP), DX
	MOVQ t+56(FP), R9
	ADDQ $63, R9
	ANDQ $-64, R9                  // T: 64-byte aligned
	VBROADCASTSD onef64<>(SB), Z24
	VBROADCASTSD fw+24(FP), Z25
	VBROADCASTSD fw1+32(FP), Z26

	// Build T[i] = (v[i], v[i+8], …, v[i+56]) for i < n =
	// 64·(blocks−1) + w + 7 (n ≥ 8): the first eight by a transpose, then
	// T[i+8] = (T[i] lanes 1…7, v[i+64]), eight at a time, then one at a
	// time.
	MOVQ DX, R10
	SHLQ $6, R10
	ADDQ CX, R10
	SUBQ $57, R10                  // n = 64·blocks + w − 57
	MOVQ SI, AX
	MOVQ R9, DI
	VMOVUPD 0(AX), Z16
	VMOVUPD 64(AX), Z17
	VMOVUPD 128(AX), Z18
	VMOVUPD 192(AX), Z19
	VMOVUPD 256(AX), Z20
	VMOVUPD 320(AX), Z21
	VMOVUPD 384(AX), Z22
	VMOVUPD 448(AX), Z23
	TRANSPOSE8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11)
	VMOVAPD Z0, 0(DI)
	VMOVAPD Z1, 64(DI)
	VMOVAPD Z2, 128(DI)
	VMOVAPD Z3, 192(DI)
	VMOVAPD Z4, 256(DI)
	VMOVAPD Z5, 320(DI)
	VMOVAPD Z6, 384(DI)
	VMOVAPD Z7, 448(DI)
	SUBQ    $8, R10
	MOVQ    R10, BX
	SHRQ    $3, BX
	JZ      buildOne

buildEight:
	// T[i+8+c] from T[i+c] (in Z_c) and v[i+64+c]
	NEXTT(512, Z0)
	NEXTT(520, Z1)
	NEXTT(528, Z2)
	NEXTT(536, Z3)
	NEXTT(544, Z4)
	NEXTT(552, Z5)
	NEXTT(560, Z6)
	NEXTT(568, Z7)
	VMOVAPD Z0, 512(DI)
	VMOVAPD Z1, 576(DI)
	VMOVAPD Z2, 640(DI)
	VMOVAPD Z3, 704(DI)
	VMOVAPD Z4, 768(DI)
	VMOVAPD Z5, 832(DI)
	VMOVAPD Z6, 896(DI)
	VMOVAPD Z7, 960(DI)
	ADDQ    $64, AX
	ADDQ    $512, DI
	DECQ    BX
	JNZ     buildEight

buildOne:
	ANDQ $7, R10
	JZ   built
	ADDQ $512, DI                  // T[i+8] for the rest, i from the last eight

buildOneLoop:
	NEXTT(512, Z0)
	VMOVAPD Z0, 0(DI)
	VMOVAPD Z1, Z0                 // the next one's T[i]
	VMOVAPD Z2, Z1
	VMOVAPD Z3, Z2
	VMOVAPD Z4, Z3
	VMOVAPD Z5, Z4
	VMOVAPD Z6, Z5                 // (at most seven: Z7 is not needed)
	ADDQ    $8, AX
	ADDQ    $64, DI
	DECQ    R10
	JNZ     buildOneLoop

built:
	MOVQ mean+40(FP), R8
	MOVQ std+48(FP), DI

block:
	// Window j + 8k of the block (k = 0…7) is lane k of accumulator j;
	// its value i is lane k of T[j + i].
	ZERO8
	VMOVAPD 0(R9), Z8
	VMOVAPD 64(R9), Z9
	VMOVAPD 128(R9), Z10
	VMOVAPD 192(R9), Z11
	VMOVAPD 256(R9), Z12
	VMOVAPD 320(R9), Z13
	VMOVAPD 384(R9), Z14
	VMOVAPD 448(R9), Z15
	MOVQ    R9, AX
	MOVQ    CX, BX

sumGroup:
	SUMSTEP(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, 512)
	SUMSTEP(Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z8, 576)
	SUMSTEP(Z10, Z11, Z12, Z13, Z14, Z15, Z8, Z9, 640)
	SUMSTEP(Z11, Z12, Z13, Z14, Z15, Z8, Z9, Z10, 704)
	SUMSTEP(Z12, Z13, Z14, Z15, Z8, Z9, Z10, Z11, 768)
	SUMSTEP(Z13, Z14, Z15, Z8, Z9, Z10, Z11, Z12, 832)
	SUMSTEP(Z14, Z15, Z8, Z9, Z10, Z11, Z12, Z13, 896)
	SUMSTEP(Z15, Z8, Z9, Z10, Z11, Z12, Z13, Z14, 960)
	ADDQ $512, AX
	JMP  sumGroup

sumDone:
	// mean = sum / w, kept in Z16…Z23 for the deviations.
	VDIVPD Z25, Z0, Z16
	VDIVPD Z25, Z1, Z17
	VDIVPD Z25, Z2, Z18
	VDIVPD Z25, Z3, Z19
	VDIVPD Z25, Z4, Z20
	VDIVPD Z25, Z5, Z21
	VDIVPD Z25, Z6, Z22
	VDIVPD Z25, Z7, Z23
	STORE64(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, R8)
	TESTQ  DI, DI
	JZ     next

	// q_j += (T[j+i] − mean_j)², the subtraction of odd j as 1·x − m on
	// the FMA pipes (one rounding, as VSUBPD).
	ZERO8
	MOVQ R9, AX
	MOVQ CX, BX

devLoop:
	VMOVAPD     0(AX), Z8
	VMOVAPD     64(AX), Z9
	VMOVAPD     128(AX), Z10
	VMOVAPD     192(AX), Z11
	VMOVAPD     256(AX), Z12
	VMOVAPD     320(AX), Z13
	VMOVAPD     384(AX), Z14
	VMOVAPD     448(AX), Z15
	VSUBPD      Z16, Z8, Z8
	VFMSUB213PD Z17, Z24, Z9
	VSUBPD      Z18, Z10, Z10
	VFMSUB213PD Z19, Z24, Z11
	VSUBPD      Z20, Z12, Z12
	VFMSUB213PD Z21, Z24, Z13
	VSUBPD      Z22, Z14, Z14
	VFMSUB213PD Z23, Z24, Z15
	VMULPD      Z8, Z8, Z8
	VMULPD      Z9, Z9, Z9
	VMULPD      Z10, Z10, Z10
	VMULPD      Z11, Z11, Z11
	VMULPD      Z12, Z12, Z12
	VMULPD      Z13, Z13, Z13
	VMULPD      Z14, Z14, Z14
	VMULPD      Z15, Z15, Z15
	VADDPD      Z8, Z0, Z0
	VADDPD      Z9, Z1, Z1
	VADDPD      Z10, Z2, Z2
	VADDPD      Z11, Z3, Z3
	VADDPD      Z12, Z4, Z4
	VADDPD      Z13, Z5, Z5
	VADDPD      Z14, Z6, Z6
	VADDPD      Z15, Z7, Z7
	ADDQ        $64, AX
	DECQ        BX
	JNZ         devLoop

	// std = √(q / (w − 1))
	VDIVPD  Z26, Z0, Z0
	VDIVPD  Z26, Z1, Z1
	VDIVPD  Z26, Z2, Z2
	VDIVPD  Z26, Z3, Z3
	VDIVPD  Z26, Z4, Z4
	VDIVPD  Z26, Z5, Z5
	VDIVPD  Z26, Z6, Z6
	VDIVPD  Z26, Z7, Z7
	VSQRTPD Z0, Z0
	VSQRTPD Z1, Z1
	VSQRTPD Z2, Z2
	VSQRTPD Z3, Z3
	VSQRTPD Z4, Z4
	VSQRTPD Z5, Z5
	VSQRTPD Z6, Z6
	VSQRTPD Z7, Z7
	STORE64(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, DI)
	ADDQ    $512, DI

next:
	ADDQ $4096, R9                 // the next block's T: 64 vectors on
	ADDQ $512, R8
	DECQ DX
	JNZ  block
	VZEROUPPER
	RET
