package api

import (
	_ "embed"

	"github.com/gin-gonic/gin"
)

// openAPIDoc is the OpenAPI 3.1 document of the HTTP API.
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the embedded OpenAPI document.
func OpenAPI() []byte { return openAPIDoc }

func (s *Server) openapi(c *gin.Context) {
	c.Data(200, "application/json; charset=utf-8", openAPIDoc)
}
