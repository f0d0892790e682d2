package server

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// OpenAPI is the OpenAPI 3.1 description of this API. Tests validate real
// responses against it, so it cannot drift from the handlers unnoticed.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", OpenAPI)
}
