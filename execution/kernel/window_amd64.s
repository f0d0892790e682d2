//go:build !purego

#include "textflag.h"

// The window loops of window.go on AVX: each 256-bit lane holds one
// window's accumulator, and lane k of the vector loaded from v[e+i+4j]
// is window e+4j+k's value i, so eight vectors are 32 consecutive windows
// summed at once, each left to right from +0, with the IEEE operations
// the scalar loops use, each rounded once, in the same order: the sum, the
// mean sum/w; the deviation x − mean, its square, the sum of squares, the
// standard deviation √(sum/(w−1)). Nothing is fused.

// func windowMeansAVX(v *float64, w, blocks int, fw float64, out *float64)
TEXT ·windowMeansAVX(SB), NOSPLIT, $0-40
	MOVQ         v+0(FP), SI
	MOVQ         w+8(FP), CX
	MOVQ         blocks+16(FP), DX
	VBROADCASTSD fw+24(FP), Y15
	MOVQ         out+32(FP), DI

sumBlock:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ   SI, AX
	MOVQ   CX, BX

sumLoop:
	VADDPD 0(AX), Y0, Y0
	VADDPD 32(AX), Y1, Y1
	VADDPD 64(AX), Y2, Y2
	VADDPD 96(AX), Y3, Y3
	VADDPD 128(AX), Y4, Y4
	VADDPD 160(AX), Y5, Y5
	VADDPD 192(AX), Y6, Y6
	VADDPD 224(AX), Y7, Y7
	ADDQ   $8, AX
	DECQ   BX
	JNZ    sumLoop

	// mean = sum / w
	VDIVPD  Y15, Y0, Y0
	VDIVPD  Y15, Y1, Y1
	VDIVPD  Y15, Y2, Y2
	VDIVPD  Y15, Y3, Y3
	VDIVPD  Y15, Y4, Y4
	VDIVPD  Y15, Y5, Y5
	VDIVPD  Y15, Y6, Y6
	VDIVPD  Y15, Y7, Y7
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y4, 128(DI)
	VMOVUPD Y5, 160(DI)
	VMOVUPD Y6, 192(DI)
	VMOVUPD Y7, 224(DI)
	ADDQ    $256, SI
	ADDQ    $256, DI
	DECQ    DX
	JNZ     sumBlock
	VZEROUPPER
	RET

// func windowStdAVX(v *float64, w, blocks int, mean *float64, fw1 float64, out *float64)
TEXT ·windowStdAVX(SB), NOSPLIT, $0-48
	MOVQ v+0(FP), SI
	MOVQ w+8(FP), CX
	MOVQ blocks+16(FP), DX
	MOVQ mean+24(FP), R8
	MOVQ out+40(FP), DI

devBlock:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ   SI, AX
	MOVQ   CX, BX

devLoop:
	// d = v − m; q += d·d
	VMOVUPD 0(AX), Y8
	VMOVUPD 32(AX), Y9
	VMOVUPD 64(AX), Y10
	VMOVUPD 96(AX), Y11
	VSUBPD  0(R8), Y8, Y8
	VSUBPD  32(R8), Y9, Y9
	VSUBPD  64(R8), Y10, Y10
	VSUBPD  96(R8), Y11, Y11
	VMULPD  Y8, Y8, Y8
	VMULPD  Y9, Y9, Y9
	VMULPD  Y10, Y10, Y10
	VMULPD  Y11, Y11, Y11
	VADDPD  Y8, Y0, Y0
	VADDPD  Y9, Y1, Y1
	VADDPD  Y10, Y2, Y2
	VADDPD  Y11, Y3, Y3
	VMOVUPD 128(AX), Y12
	VMOVUPD 160(AX), Y13
	VMOVUPD 192(AX), Y14
	VMOVUPD 224(AX), Y15
	VSUBPD  128(R8), Y12, Y12
	VSUBPD  160(R8), Y13, Y13
	VSUBPD  192(R8), Y14, Y14
	VSUBPD  224(R8), Y15, Y15
	VMULPD  Y12, Y12, Y12
	VMULPD  Y13, Y13, Y13
	VMULPD  Y14, Y14, Y14
	VMULPD  Y15, Y15, Y15
	VADDPD  Y12, Y4, Y4
	VADDPD  Y13, Y5, Y5
	VADDPD  Y14, Y6, Y6
	VADDPD  Y15, Y7, Y7
	ADDQ    $8, AX
	DECQ    BX
	JNZ     devLoop

	// std = √(q / (w − 1))
	VBROADCASTSD fw1+32(FP), Y8
	VDIVPD       Y8, Y0, Y0
	VDIVPD       Y8, Y1, Y1
	VDIVPD       Y8, Y2, Y2
	VDIVPD       Y8, Y3, Y3
	VDIVPD       Y8, Y4, Y4
	VDIVPD       Y8, Y5, Y5
	VDIVPD       Y8, Y6, Y6
	VDIVPD       Y8, Y7, Y7
	VSQRTPD      Y0, Y0
	VSQRTPD      Y1, Y1
	VSQRTPD      Y2, Y2
	VSQRTPD      Y3, Y3
	VSQRTPD      Y4, Y4
	VSQRTPD      Y5, Y5
	VSQRTPD      Y6, Y6
	VSQRTPD      Y7, Y7
	VMOVUPD      Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y4, 128(DI)
	VMOVUPD Y5, 160(DI)
	VMOVUPD Y6, 192(DI)
	VMOVUPD Y7, 224(DI)
	ADDQ    $256, SI
	ADDQ    $256, R8
	ADDQ    $256, DI
	DECQ    DX
	JNZ     devBlock
	VZEROUPPER
	RET
