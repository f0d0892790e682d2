// Package sampledata embeds the real market data groundgate serves by
// default, so that `groundgate serve` runs real strategies with no flags.
// README.md in this folder gives every file's source and licence.
package sampledata

import (
	"embed"
	"io/fs"
)

//go:embed data
var files embed.FS

// FS returns the bundled data root: paths such as "oil-spot/wti-daily.csv".
func FS() fs.FS {
	sub, err := fs.Sub(files, "data")
	if err != nil {
		panic(err) // the embedded tree always has "data"
	}
	return sub
}
