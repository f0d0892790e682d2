package registry

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/groundgate/groundgate/hashing"
)

//go:embed catalog/*.json catalog/patches/*.json
var builtin embed.FS

// BuiltinCatalog returns the built-in trading-research catalog that a new
// database is seeded with: the entries of catalog/*.json with the disc
// patches of catalog/patches/*.json applied in file-name order (what
// groundgate fuzz --patch suggested and people kept; they change no
// identity).
func BuiltinCatalog() ([]Entry, error) {
	es, err := LoadCatalog(builtin, "catalog")
	if err != nil {
		return nil, err
	}
	files, err := fs.Glob(builtin, "catalog/patches/*.json")
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := fs.ReadFile(builtin, f)
		if err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		p, err := DecodeDiscPatch(data, f)
		if err == nil {
			es, err = p.ApplyEntries(es)
		}
		if err != nil {
			return nil, fmt.Errorf("catalog: %s: %w", f, err)
		}
	}
	return es, nil
}

// LoadCatalog reads every *.json file in dir of fsys, in file-name order;
// each file holds a JSON array of entries. Every entry is strictly decoded
// and validated, and names and identities must be unique across the whole
// catalog. Errors name the file, the entry and the field.
func LoadCatalog(fsys fs.FS, dir string) ([]Entry, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("catalog: no *.json files in %s", dir)
	}
	var (
		out    []Entry
		names  = map[string]string{}         // name -> where
		idents = map[hashing.Digest]string{} // identity -> name
	)
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		entries, err := DecodeEntries(data, f)
		if err != nil {
			return nil, err
		}
		for i, e := range entries {
			where := fmt.Sprintf("%s#%d", f, i)
			if prev, ok := names[e.Name]; ok {
				return nil, fmt.Errorf("catalog: %s: name %q already defined at %s: %w", where, e.Name, prev, ErrInvalidEntry)
			}
			names[e.Name] = where
			id, err := e.Identity()
			if err != nil {
				return nil, fmt.Errorf("catalog: %s: %w", where, err)
			}
			if prev, ok := idents[id]; ok {
				return nil, fmt.Errorf("catalog: %s: %w", where, &DuplicateError{Name: e.Name, Existing: prev, Identity: id})
			}
			idents[id] = e.Name
			out = append(out, e)
		}
	}
	return out, nil
}

// DecodeEntries strictly decodes a JSON array of entries; source names the
// document in errors (a file name, or "request body").
func DecodeEntries(data []byte, source string) ([]Entry, error) {
	var raws []json.RawMessage
	if err := hashing.DecodeStrict(data, &raws); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of entries: %w", source, err)
	}
	// Decoded and validated on every core: at 100,000 entries (a bulk
	// load) this is seconds. The first bad entry in document order is the
	// one reported, as when decoding one by one.
	out := make([]Entry, len(raws))
	errs := make([]error, len(raws))
	err := forEach(context.Background(), len(raws), func(w *worker, i int) {
		out[i], errs[i] = decodeEntry(raws[i], fmt.Sprintf("#%d", i), true, w)
	})
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
	}
	return out, nil
}

// DuplicateError says that an entry behaves exactly like one stored under
// another name. It wraps ErrDuplicateIdentity.
type DuplicateError struct {
	Name     string
	Existing string
	Identity hashing.Digest
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("entry %q has identity %s, which %q already has: two names with one identity are one capability", e.Name, e.Identity, e.Existing)
}

// Unwrap makes errors.Is(err, ErrDuplicateIdentity) true.
func (e *DuplicateError) Unwrap() error { return ErrDuplicateIdentity }
