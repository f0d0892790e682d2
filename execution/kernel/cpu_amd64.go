//go:build !purego

package kernel

// What the processor and the operating system support, checked once and
// read-only afterwards: the vector loops (window_amd64.s, log_amd64.s) run
// only where they can.
var (
	haveAVX    = detectAVX()
	haveAVX2   = haveAVX && detectAVX2()
	haveAVX512 = haveAVX2 && detectAVX512()
)

func cpuid(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv0() uint32

// detectAVX: CPUID.1:ECX reports AVX (bit 28) and OSXSAVE (bit 27), and
// XCR0 says the operating system saves the XMM and YMM state (bits 1, 2).
func detectAVX() bool {
	if max, _, _, _ := cpuid(0, 0); max < 1 {
		return false
	}
	_, _, c, _ := cpuid(1, 0)
	if c&(1<<27) == 0 || c&(1<<28) == 0 {
		return false
	}
	return xgetbv0()&6 == 6
}

// detectAVX2: CPUID.(7,0):EBX bit 5.
func detectAVX2() bool {
	if max, _, _, _ := cpuid(0, 0); max < 7 {
		return false
	}
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<5) != 0
}

// detectAVX512: what windowt_amd64.s uses — FMA (CPUID.1:ECX bit 12),
// AVX-512 F (CPUID.(7,0):EBX bit 16), and the operating system saving the
// opmask and the whole ZMM state (XCR0 bits 5 to 7).
func detectAVX512() bool {
	if _, _, c, _ := cpuid(1, 0); c&(1<<12) == 0 {
		return false
	}
	if _, b, _, _ := cpuid(7, 0); b&(1<<16) == 0 {
		return false
	}
	return xgetbv0()&0xe0 == 0xe0
}
