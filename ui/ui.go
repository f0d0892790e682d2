// Package ui holds the web UI's built assets (SPEC §18), embedded so that
// `go build` needs no Node: the sources are in ui/src, built with Vite by
// `npm run build` (ui/scripts/build.mjs) into ui/dist, which is committed.
// dist/sources.sha256 records the digest of the sources the build was made
// from ; a test recomputes it, so that a source change
// without a rebuild fails.
package ui

import (
	"embed"
	"io/fs"
)

//go:embed dist
var dist embed.FS

// Dist is the built UI: index.html at its root, hashed assets under
// assets/.
var Dist = func() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embed pattern names dist: it is there
	}
	return sub
}()
