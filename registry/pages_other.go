//go:build !linux

package registry

import (
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// pageMap hands read pages back to the kernel on Linux (pages_linux.go);
// elsewhere the kernel decides.
type pageMap struct{}

func pageMapOf(*bolt.Tx) pageMap { return pageMap{} }

func (pageMap) release(first, last []byte) {}

func (pageMap) releaseAll(anchor []byte) {}

// addressOf is where b starts: records read in address order are read in
// file order.
func addressOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
