package server

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

func (s *Server) postExecution(c echo.Context) error {
	b, err := readBody(c, s.cfg.BodyLimit)
	if err != nil {
		return err
	}
	fp, err := s.Execute(c.Request().Context(), b)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/executions/"+fp.Hash.String())
	return c.JSON(http.StatusCreated, fp)
}

func (s *Server) getExecution(c echo.Context) error {
	fp, err := s.Footprint(c.Request().Context(), c.Param("hash"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, fp)
}

func (s *Server) postReplay(c echo.Context) error {
	rep, err := s.Replay(c.Request().Context(), c.Param("hash"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

func (s *Server) getDiff(c echo.Context) error {
	rep, err := s.Diff(c.Request().Context(), c.Param("a"), c.Param("b"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

// pnlBody is a morphism's P&L as GET …/morphisms/{index}/pnl serves it:
// dates as ISO days and one value per date, null where the P&L is NA.
type pnlBody struct {
	Execution string     `json:"execution"`
	Index     int        `json:"index"`
	Morphism  string     `json:"morphism"`
	Dates     []string   `json:"dates"`
	PnL       []*float64 `json:"pnl"`
}

func (s *Server) getPnL(c echo.Context) error {
	ctx := c.Request().Context()
	h, err := parseDigest("hash", c.Param("hash"))
	if err != nil {
		return err
	}
	i, err := strconv.Atoi(c.Param("index"))
	if err != nil || i < 0 {
		return newError(ptMalformed, "morphism index %q: want a grid index, 0 or more", c.Param("index"))
	}
	m, t, err := s.exec.PnL(ctx, h, i)
	if err != nil {
		return err
	}
	out := pnlBody{Execution: h.String(), Index: i, Morphism: m.Hash.String(), Dates: make([]string, len(t.Dates)), PnL: make([]*float64, len(t.Dates))}
	for r, d := range t.Dates {
		out.Dates[r] = time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly)
		if len(t.Cols) > 0 && !math.IsNaN(t.Cols[0][r]) && !math.IsInf(t.Cols[0][r], 0) {
			v := t.Cols[0][r]
			out.PnL[r] = &v
		}
	}
	return c.JSON(http.StatusOK, out)
}
