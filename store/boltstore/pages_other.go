//go:build !linux

package boltstore

// ReleasePages hands read pages back to the kernel on Linux
// (pages_linux.go); elsewhere the kernel decides.
func (*tx) ReleasePages(first, last []byte) {}

// ReleaseAllPages: see ReleasePages.
func (*tx) ReleaseAllPages(anchor []byte) {}
