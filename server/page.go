package server

import (
	"strconv"

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
