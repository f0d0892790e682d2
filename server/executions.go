package server

import (
	"net/http"

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
