package registry

import "unsafe"

// addressOf is where b starts: records read in address order are read in
// file order (bbolt's map), and their pages handed back in runs
// (pageReleaser).
func addressOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
