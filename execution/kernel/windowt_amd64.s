//go:build !purego

#include "textflag.h"

DATA onef64<>+0(SB)/8, $1.0
GLOBL onef64<>(SB), RODATA|NOPTR, $8

// TRANSPOSE4 sets r0…r3 to the columns of the 4×4 matrix whose rows are
// a0…a3 (r_k lane i = a_i lane k), using t0…t3.
#define TRANSPOSE4(a0, a1, a2, a3, t0, t1, t2, t3, r0, r1, r2, r3) \
	VUNPCKLPD  a1, a0, t0 \
	VUNPCKHPD  a1, a0, t1 \
	VUNPCKLPD  a3, a2, t2 \
	VUNPCKHPD  a3, a2, t3 \
	VPERM2F128 $0x20, t2, t0, r0 \
	VPERM2F128 $0x20, t3, t1, r1 \
	VPERM2F128 $0x31, t2, t0, r2 \
	VPERM2F128 $0x31, t3, t1, r3

// STORE32 stores the 32 windows of a block, lane k of a_j being window
// j + 8k, in window order at 0(base), using Y8…Y15.
#define STORE32(a0, a1, a2, a3, a4, a5, a6, a7, base) \
	TRANSPOSE4(a0, a1, a2, a3, Y12, Y13, Y14, Y15, Y8, Y9, Y10, Y11) \
	VMOVUPD Y8, 0(base) \
	VMOVUPD Y9, 64(base) \
	VMOVUPD Y10, 128(base) \
	VMOVUPD Y11, 192(base) \
	TRANSPOSE4(a4, a5, a6, a7, Y12, Y13, Y14, Y15, Y8, Y9, Y10, Y11) \
	VMOVUPD Y8, 32(base) \
	VMOVUPD Y9, 96(base) \
	VMOVUPD Y10, 160(base) \
	VMOVUPD Y11, 224(base)

// ZERO8 clears the eight accumulators.
#define ZERO8 \
	VXORPD Y0, Y0, Y0 \
	VXORPD Y1, Y1, Y1 \
	VXORPD Y2, Y2, Y2 \
	VXORPD Y3, Y3, Y3 \
	VXORPD Y4, Y4, Y4 \
	VXORPD Y5, Y5, Y5 \
	VXORPD Y6, Y6, Y6 \
	VXORPD Y7, Y7, Y7

// One step of the sum loop: acc_j += r_j (half of the additions as
// 1·r_j + acc_j on the FMA pipes: the same single rounding), then the
// register of this step takes the vector eight steps ahead.
#define SUMSTEP(r0, r1, r2, r3, r4, r5, r6, r7, off) \
	VADDPD      r0, Y0, Y0 \
	VFMADD231PD r1, Y24, Y1 \
	VADDPD      r2, Y2, Y2 \
	VFMADD231PD r3, Y24, Y3 \
	VADDPD      r4, Y4, Y4 \
	VFMADD231PD r5, Y24, Y5 \
	VADDPD      r6, Y6, Y6 \
	VFMADD231PD r7, Y24, Y7 \
	VMOVAPD     off(AX), r0 \
	DECQ        BX \
	JZ          sumDone

// func windowStatsT(v *float64, w, blocks int, fw, fw1 float64, mean, std, t *float64)
TEXT ·windowStatsT(SB), NOSPLIT, $0-64
	MOVQ v+0(FP), SI
	MOVQ w+8(FP), CX
	MOVQ blocks+16(FP), DX
	MOVQ t+56(FP), R9
	ADDQ $31, R9
	ANDQ $-32, R9                  // T: 32-byte aligned
	VBROADCASTSD onef64<>(SB), Y24
	VBROADCASTSD fw+24(FP), Y25
	VBROADCASTSD fw1+32(FP), Y26

	// Build T[i] = (v[i], v[i+8], v[i+16], v[i+24]) for i < n =
	// 32·(blocks−1) + w + 7: four at a time, then one at a time.
	MOVQ DX, R10
	SHLQ $5, R10
	ADDQ CX, R10
	SUBQ $25, R10                  // n = 32·blocks + w − 25
	MOVQ SI, AX
	MOVQ R9, DI
	MOVQ R10, BX
	SHRQ $2, BX
	JZ   buildOne

buildFour:
	VMOVUPD 0(AX), Y0
	VMOVUPD 64(AX), Y1
	VMOVUPD 128(AX), Y2
	VMOVUPD 192(AX), Y3
	TRANSPOSE4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11)
	VMOVAPD Y8, 0(DI)
	VMOVAPD Y9, 32(DI)
	VMOVAPD Y10, 64(DI)
	VMOVAPD Y11, 96(DI)
	ADDQ    $32, AX
	ADDQ    $128, DI
	DECQ    BX
	JNZ     buildFour

buildOne:
	ANDQ $3, R10
	JZ   built

buildOneLoop:
	VMOVSD 0(AX), X0
	VMOVSD X0, 0(DI)
	VMOVSD 64(AX), X0
	VMOVSD X0, 8(DI)
	VMOVSD 128(AX), X0
	VMOVSD X0, 16(DI)
	VMOVSD 192(AX), X0
	VMOVSD X0, 24(DI)
	ADDQ   $8, AX
	ADDQ   $32, DI
	DECQ   R10
	JNZ    buildOneLoop

built:
	MOVQ mean+40(FP), R8
	MOVQ std+48(FP), DI

block:
	// Window j + 8k of the block (k = 0…3) is lane k of accumulator j;
	// its value i is lane k of T[j + i].
	ZERO8
	VMOVAPD 0(R9), Y8
	VMOVAPD 32(R9), Y9
	VMOVAPD 64(R9), Y10
	VMOVAPD 96(R9), Y11
	VMOVAPD 128(R9), Y12
	VMOVAPD 160(R9), Y13
	VMOVAPD 192(R9), Y14
	VMOVAPD 224(R9), Y15
	MOVQ    R9, AX
	MOVQ    CX, BX

sumGroup:
	SUMSTEP(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, 256)
	SUMSTEP(Y9, Y10, Y11, Y12, Y13, Y14, Y15, Y8, 288)
	SUMSTEP(Y10, Y11, Y12, Y13, Y14, Y15, Y8, Y9, 320)
	SUMSTEP(Y11, Y12, Y13, Y14, Y15, Y8, Y9, Y10, 352)
	SUMSTEP(Y12, Y13, Y14, Y15, Y8, Y9, Y10, Y11, 384)
	SUMSTEP(Y13, Y14, Y15, Y8, Y9, Y10, Y11, Y12, 416)
	SUMSTEP(Y14, Y15, Y8, Y9, Y10, Y11, Y12, Y13, 448)
	SUMSTEP(Y15, Y8, Y9, Y10, Y11, Y12, Y13, Y14, 480)
	ADDQ $256, AX
	JMP  sumGroup

sumDone:
	// mean = sum / w, kept in Y16…Y23 for the deviations.
	VDIVPD  Y25, Y0, Y16
	VDIVPD  Y25, Y1, Y17
	VDIVPD  Y25, Y2, Y18
	VDIVPD  Y25, Y3, Y19
	VDIVPD  Y25, Y4, Y20
	VDIVPD  Y25, Y5, Y21
	VDIVPD  Y25, Y6, Y22
	VDIVPD  Y25, Y7, Y23
	STORE32(Y16, Y17, Y18, Y19, Y20, Y21, Y22, Y23, R8)
	TESTQ   DI, DI
	JZ      next

	// q_j += (T[j+i] − mean_j)², the subtraction of odd j as 1·x − m on
	// the FMA pipes (one rounding, as VSUBPD).
	ZERO8
	MOVQ   R9, AX
	MOVQ   CX, BX

devLoop:
	VMOVAPD     0(AX), Y8
	VMOVAPD     32(AX), Y9
	VMOVAPD     64(AX), Y10
	VMOVAPD     96(AX), Y11
	VMOVAPD     128(AX), Y12
	VMOVAPD     160(AX), Y13
	VMOVAPD     192(AX), Y14
	VMOVAPD     224(AX), Y15
	VSUBPD      Y16, Y8, Y8
	VFMSUB213PD Y17, Y24, Y9
	VSUBPD      Y18, Y10, Y10
	VFMSUB213PD Y19, Y24, Y11
	VSUBPD      Y20, Y12, Y12
	VFMSUB213PD Y21, Y24, Y13
	VSUBPD      Y22, Y14, Y14
	VFMSUB213PD Y23, Y24, Y15
	VMULPD      Y8, Y8, Y8
	VMULPD      Y9, Y9, Y9
	VMULPD      Y10, Y10, Y10
	VMULPD      Y11, Y11, Y11
	VMULPD      Y12, Y12, Y12
	VMULPD      Y13, Y13, Y13
	VMULPD      Y14, Y14, Y14
	VMULPD      Y15, Y15, Y15
	VADDPD      Y8, Y0, Y0
	VADDPD      Y9, Y1, Y1
	VADDPD      Y10, Y2, Y2
	VADDPD      Y11, Y3, Y3
	VADDPD      Y12, Y4, Y4
	VADDPD      Y13, Y5, Y5
	VADDPD      Y14, Y6, Y6
	VADDPD      Y15, Y7, Y7
	ADDQ        $32, AX
	DECQ        BX
	JNZ         devLoop

	// std = √(q / (w − 1))
	VDIVPD  Y26, Y0, Y0
	VDIVPD  Y26, Y1, Y1
	VDIVPD  Y26, Y2, Y2
	VDIVPD  Y26, Y3, Y3
	VDIVPD  Y26, Y4, Y4
	VDIVPD  Y26, Y5, Y5
	VDIVPD  Y26, Y6, Y6
	VDIVPD  Y26, Y7, Y7
	VSQRTPD Y0, Y0
	VSQRTPD Y1, Y1
	VSQRTPD Y2, Y2
	VSQRTPD Y3, Y3
	VSQRTPD Y4, Y4
	VSQRTPD Y5, Y5
	VSQRTPD Y6, Y6
	VSQRTPD Y7, Y7
	STORE32(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, DI)
	ADDQ    $256, DI

next:
	ADDQ $1024, R9                 // the next block's T: 32 vectors on
	ADDQ $256, R8
	DECQ DX
	JNZ  block
	VZEROUPPER
	RET
