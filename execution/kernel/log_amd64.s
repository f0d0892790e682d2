//go:build !purego

#include "textflag.h"

// logsAVX2 is math.Log's amd64 assembly (math/log_amd64.s, archLog) on four
// values at a time: the same IEEE operations on the same operands in the
// same order, each rounded once, so every lane is bit for bit archLog's
// result for a positive finite x. Lanes holding 0, a negative value, +Inf
// or NaN get a meaningless value; the caller fixes them.

#define CONST4(name, bits) \
	DATA name<>+0(SB)/8, $bits \
	DATA name<>+8(SB)/8, $bits \
	DATA name<>+16(SB)/8, $bits \
	DATA name<>+24(SB)/8, $bits \
	GLOBL name<>(SB), RODATA|NOPTR, $32

CONST4(logMant, 0x000FFFFFFFFFFFFF)
CONST4(logExpMask, 0x00000000000007FF)
CONST4(logMagic, 0x4330000000000000)     // 2⁵², as a float64
CONST4(logMagicBias, 0x43300000000003FE) // 2⁵² + 1022
CONST4(logHalf, 0x3FE0000000000000)
CONST4(logOne, 0x3FF0000000000000)
CONST4(logTwo, 0x4000000000000000)
CONST4(logHSqrt2, 0x3FE6A09E667F3BCD)
CONST4(logLn2Hi, 0x3FE62E42FEE00000)
CONST4(logLn2Lo, 0x3DEA39EF35793C76)
CONST4(logL1, 0x3FE5555555555593)
CONST4(logL2, 0x3FD999999997FA04)
CONST4(logL3, 0x3FD2492494229359)
CONST4(logL4, 0x3FCC71C51D8E78AF)
CONST4(logL5, 0x3FC7466496CB03DE)
CONST4(logL6, 0x3FC39A09D078C69F)
CONST4(logL7, 0x3FC2F112DF3E5244)

// func logsAVX2(x *float64, quads int, out *float64)
TEXT ·logsAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ quads+8(FP), CX
	MOVQ out+16(FP), DI

loop:
	VMOVUPD (SI), Y0
	// f1, ki := Frexp(x); k := float64(ki): the exponent field − 1022
	VANDPD logMant<>(SB), Y0, Y2
	VORPD  logHalf<>(SB), Y2, Y2      // y2 = f1
	VPSRLQ $52, Y0, Y1
	VPAND  logExpMask<>(SB), Y1, Y1
	VPOR   logMagic<>(SB), Y1, Y1     // 2⁵² + exponent field, exactly
	VSUBPD logMagicBias<>(SB), Y1, Y1 // y1 = k
	// mask = !(√2/2 < f1); k −= mask&1; f1 *= (mask&1) + 1
	VMOVUPD logHSqrt2<>(SB), Y0
	VCMPPD  $5, Y2, Y0, Y0
	VANDPD  logOne<>(SB), Y0, Y3
	VSUBPD  Y3, Y1, Y1
	VADDPD  logOne<>(SB), Y3, Y3
	VMULPD  Y3, Y2, Y2
	// f := f1 − 1
	VSUBPD logOne<>(SB), Y2, Y2
	// s := f / (2 + f)
	VMOVUPD logTwo<>(SB), Y0
	VADDPD  Y2, Y0, Y0
	VDIVPD  Y0, Y2, Y3
	// s2 := s·s; s4 := s2·s2
	VMULPD Y3, Y3, Y4
	VMULPD Y4, Y4, Y5
	// t1 := s2·(L1 + s4·(L3 + s4·(L5 + s4·L7)))
	VMOVUPD logL7<>(SB), Y6
	VMULPD  Y5, Y6, Y6
	VADDPD  logL5<>(SB), Y6, Y6
	VMULPD  Y5, Y6, Y6
	VADDPD  logL3<>(SB), Y6, Y6
	VMULPD  Y5, Y6, Y6
	VADDPD  logL1<>(SB), Y6, Y6
	VMULPD  Y6, Y4, Y4
	// t2 := s4·(L2 + s4·(L4 + s4·L6))
	VMOVUPD logL6<>(SB), Y6
	VMULPD  Y5, Y6, Y6
	VADDPD  logL4<>(SB), Y6, Y6
	VMULPD  Y5, Y6, Y6
	VADDPD  logL2<>(SB), Y6, Y6
	VMULPD  Y6, Y5, Y5
	// R := t1 + t2
	VADDPD Y5, Y4, Y4
	// hfsq := 0.5·f·f
	VMOVUPD logHalf<>(SB), Y0
	VMULPD  Y2, Y0, Y0
	VMULPD  Y2, Y0, Y0
	// k·Ln2Hi − ((hfsq − (s·(hfsq + R) + k·Ln2Lo)) − f)
	VADDPD  Y0, Y4, Y4
	VMULPD  Y4, Y3, Y3
	VMOVUPD logLn2Lo<>(SB), Y4
	VMULPD  Y1, Y4, Y4
	VADDPD  Y4, Y3, Y3
	VSUBPD  Y3, Y0, Y0
	VSUBPD  Y2, Y0, Y0
	VMULPD  logLn2Hi<>(SB), Y1, Y1
	VSUBPD  Y0, Y1, Y1
	VMOVUPD Y1, (DI)

	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET
