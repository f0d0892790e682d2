package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/ui"
)

// UIPath is where the web UI is served (SPEC §18).
const UIPath = "/ui/"

// uiCSP allows the UI's own files and nothing else: no inline script or
// style, no eval, no other origin, no framing. The UI sets styles through
// the CSSOM only, which style-src does not govern.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiFile is one built file, read once at start.
type uiFile struct {
	body  []byte
	ctype string
	etag  string
	// immutable: the name holds a digest of the content (Vite's assets/),
	// so a client may keep it for good.
	immutable bool
}

// uiFiles loads the embedded build: every file by its path under /ui/.
func uiFiles(dist fs.FS) map[string]uiFile {
	files := map[string]uiFile{}
	_ = fs.WalkDir(dist, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dist, p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // the host's mime table may lack or differ on these
		case ".js", ".mjs":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		case ".png":
			ct = "image/png"
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(b)
		files[p] = uiFile{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, immutable: strings.HasPrefix(p, "assets/")}
		return nil
	})
	return files
}

// routeUI serves the UI at /ui/: its assets by path, and index.html for
// every other path below /ui/, so that each page's URL (a deep link such
// as /ui/executions/sha256:…) loads the app, which routes on the path.
func routeUI(get func(string, echo.HandlerFunc)) {
	files := uiFiles(ui.Dist)
	get(UIPath+"*", func(c echo.Context) error {
		p := strings.TrimPrefix(c.Request().URL.Path, UIPath)
		f, ok := files[p]
		if !ok {
			if strings.HasPrefix(p, "assets/") {
				return newError(ptNotFound, "no UI asset %q", p)
			}
			f = files["index.html"]
		}
		h := c.Response().Header()
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set(echo.HeaderContentType, f.ctype)
		h.Set("ETag", f.etag)
		if f.immutable {
			h.Set(echo.HeaderCacheControl, "public, max-age=31536000, immutable")
		} else {
			h.Set(echo.HeaderCacheControl, "no-cache")
		}
		// ServeContent answers If-None-Match with 304 and HEAD without a body.
		http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(f.body))
		return nil
	})
}
