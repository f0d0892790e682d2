//go:build linux

package boltstore

import (
	"os"
	"syscall"
	"unsafe"
)

// pageMap is the part of bbolt's memory map a read transaction sees. An
// open of the registry reads every record of the current version once
// through it; the entries then live on the heap, and the record pages,
// which the kernel keeps cached anyway, would otherwise count a second
// time in the process's resident memory (a 100,000-entry registry: 100
// MB). The map is read-only and shared, so dropping pages from it loses
// nothing: the next access faults them back in from the page cache.
type pageMap struct{ lo, hi, page uintptr }

func (t *tx) pages() pageMap {
	lo := t.tx.DB().Info().Data
	return pageMap{lo: lo, hi: lo + uintptr(t.tx.Size()), page: uintptr(os.Getpagesize())}
}

// ReleasePages drops the pages from the start of first to the end of last
// (two slices read in this transaction, first at the lower address) from
// the process. Slices outside the map (a write transaction's copies) are
// left alone. It is advice: nothing read changes.
func (t *tx) ReleasePages(first, last []byte) {
	if len(first) == 0 || len(last) == 0 {
		return
	}
	m := t.pages()
	p := unsafe.Pointer(unsafe.SliceData(first))
	a, z := uintptr(p), uintptr(unsafe.Pointer(unsafe.SliceData(last)))+uintptr(len(last))
	if a < m.lo || z > m.hi || z <= a {
		return
	}
	start, end := a&^(m.page-1), (z+m.page-1)&^(m.page-1)
	if end > (m.hi+m.page-1)&^(m.page-1) {
		return
	}
	// Advice only: an error changes nothing that was read.
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, -int(a-start))), end-start), syscall.MADV_DONTNEED)
}

// ReleaseAllPages drops every page of the map from the process; anchor is
// any slice read in this transaction (the map's address comes as a
// number, and only a pointer may be moved). Releasing runs of records as
// they are read is not enough: a fault maps the faulting page's
// neighbours with it (fault-around, 64 KB), so released pages come back
// as the next runs are read, and an open of 100,000 entries ended with
// half the record pages, the branch pages and bbolt's freelist resident,
// 40–60 MB that nothing reads again soon. So the registry's read of a
// version releases everything every 32 runs, and an open once the version
// is read.
func (t *tx) ReleaseAllPages(anchor []byte) {
	if len(anchor) == 0 {
		return
	}
	m := t.pages()
	a := uintptr(unsafe.Pointer(unsafe.SliceData(anchor)))
	if a < m.lo || a >= m.hi {
		return
	}
	size := (m.hi - m.lo + m.page - 1) &^ (m.page - 1)
	start := unsafe.Add(unsafe.Pointer(unsafe.SliceData(anchor)), -int(a-m.lo))
	_ = syscall.Madvise(unsafe.Slice((*byte)(start), size), syscall.MADV_DONTNEED) // advice only, as in ReleasePages
}
