package server

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// Pagination of lists that grow without bound (GET /v1/registry/history):
// ?limit=N (1…maxPageLimit, default defaultPageLimit) and a cursor,
// ?before=V, the last item of the previous page; the body's "next" is
// the path of the following page, absent on the last.
const (
	defaultPageLimit = 100
	maxPageLimit     = 1000
)

// pageQuery refuses a paged list's query unless it holds only the
// parameters the path documents, each at most once, in UTF-8: one
// spelling, like a body's keys (?limit=2&limit=3 or ?Limit=2 would
// otherwise be read one way here and another by a proxy or a cache).
func pageQuery(c echo.Context, allowed ...string) error {
	for k, vs := range c.QueryParams() {
		switch {
		case !slices.Contains(allowed, k):
			return newError(ptMalformed, "query parameter %q: this path takes %s", clipName(k), strings.Join(allowed, ", "))
		case len(vs) > 1:
			return newError(ptMalformed, "query parameter %q is given %d times: give it once", k, len(vs))
		case !utf8.ValidString(vs[0]):
			return newError(ptMalformed, "query parameter %q is not UTF-8", k)
		}
	}
	return nil
}

// pageLimit reads ?limit: defaultPageLimit when absent, a 400 problem when
// it is not an integer in 1…maxPageLimit.
func pageLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return defaultPageLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPageLimit {
		return 0, newError(ptMalformed, "limit %q: want an integer from 1 to %d", v, maxPageLimit)
	}
	return n, nil
}

// pageBefore reads the ?before cursor, a version number; ok is false when
// it is absent.
func pageBefore(c echo.Context) (before uint64, ok bool, err error) {
	v := c.QueryParam("before")
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false, newError(ptMalformed, "before %q: want a version number from a page's last item", v)
	}
	return n, true, nil
}

// Lists in name order (GET /v1/registry's entries, GET /v1/upstreams) are
// paged with ?limit and the cursor ?after=NAME, the last name of the
// previous page. Without either the whole list is answered, as before
// pagination: those lists are bounded by what an admin wrote, and a
// registry's entries are what its hash covers, so a client checking the
// hash needs them all at once.

// pageAfter reads ?after; paged is true when ?limit or ?after is given.
func pageAfter(c echo.Context) (after string, paged bool) {
	after = c.QueryParam("after")
	return after, after != "" || c.QueryParam("limit") != ""
}

// pageByName returns the items of sorted (in byte order of name) after
// the cursor, at most limit of them, and whether more follow.
func pageByName[T any](sorted []T, name func(T) string, after string, limit int) (page []T, more bool) {
	i := sort.Search(len(sorted), func(i int) bool { return name(sorted[i]) > after })
	end := min(i+limit, len(sorted))
	return sorted[i:end], end < len(sorted)
}

// nextAfter is the path of the page after last: path's other query
// parameters (extra, already encoded) then limit and after.
func nextAfter(path, extra string, limit int, last string) string {
	return path + "?" + extra + "limit=" + strconv.Itoa(limit) + "&after=" + url.QueryEscape(last)
}
