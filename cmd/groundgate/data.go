package main

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/sampledata"
)

// dataRoot is where request data sources resolve: a directory opened with
// os.OpenRoot (which refuses "..", absolute paths and symlinks leading out
// of it), or the bundled sample data.
type dataRoot struct {
	fs   fs.FS
	name string
	root *os.Root
}

func openDataRoot(dir string) (*dataRoot, error) {
	if dir == "" {
		return &dataRoot{fs: sampledata.FS(), name: "(bundled sample data)"}, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("data root: %w", err)
	}
	return &dataRoot{fs: root.FS(), name: dir, root: root}, nil
}

func (d *dataRoot) Close() error {
	if d.root != nil {
		return d.root.Close()
	}
	return nil
}

func newExecutor(s *registry.Store, data *dataRoot, log *slog.Logger) (*execution.Executor, error) {
	arts, err := artifacts.Open(s.DB())
	if err != nil {
		return nil, err
	}
	return execution.New(s, arts, s.DB(), data.fs, execution.Options{Logger: log})
}
