package fuzz

import (
	"bytes"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"
)

// HostileDir is the folder of a DataRoot where the runtime tests put the
// frames they generate: hostile frames and the smaller frames minimising a
// finding tries.
const HostileDir = "_fuzz"

// DataRoot is the data root runtime cases execute on: the data the server
// uses (the base) with, under HostileDir, frames the fuzzer writes while it
// runs. Those are held in memory: a run writes nothing to disk, and an
// executor built over the root reads them like any file (the "data"
// predicate's path rules apply to them as to the base's files). It is safe
// for concurrent use.
type DataRoot struct {
	base  fs.FS
	mu    sync.RWMutex
	files map[string][]byte
}

// NewDataRoot returns a root serving base, with an empty HostileDir
// (whatever base holds there is hidden).
func NewDataRoot(base fs.FS) *DataRoot {
	return &DataRoot{base: base, files: map[string][]byte{}}
}

// Base is the data the root serves outside HostileDir.
func (d *DataRoot) Base() fs.FS { return d.base }

// Put stores a generated file at name (a path inside HostileDir).
func (d *DataRoot) Put(name string, data []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.files[name] = bytes.Clone(data)
}

func hostile(name string) bool { return strings.HasPrefix(name, HostileDir+"/") || name == HostileDir }

// Open opens a generated file, or else a file of the base.
func (d *DataRoot) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if !hostile(name) {
		return d.base.Open(name)
	}
	d.mu.RLock()
	b, ok := d.files[name]
	d.mu.RUnlock()
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{name: name, Reader: bytes.NewReader(b), size: int64(len(b))}, nil
}

// memFile is a generated file, read-only.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f}, nil }
func (f *memFile) Close() error               { return nil }

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return i.f.name[strings.LastIndexByte(i.f.name, '/')+1:] }
func (i memInfo) Size() int64        { return i.f.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

var (
	_ fs.FS     = (*DataRoot)(nil)
	_ io.Reader = (*memFile)(nil)
)
