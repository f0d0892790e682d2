//go:build !purego

package kernel

import "testing"

// TestWindowLoopsWithoutAVX512: the AVX2 loops give the same bits on
// their own, as they run where the processor has no AVX-512 (this box has
// it, so the test above exercises the AVX-512 loops for whole blocks).
func TestWindowLoopsWithoutAVX512(t *testing.T) {
	if !haveAVX2 {
		t.Fatal("this amd64 test needs AVX2; build with -tags purego where it is missing")
	}
	was := haveAVX512
	haveAVX512 = false
	defer func() { haveAVX512 = was }()
	checkWindowLoops(t)
}
