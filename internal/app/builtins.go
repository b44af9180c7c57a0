package app

import (
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/config"
)

// addBuiltins registers the builtin connectors beyond tavily.
func addBuiltins(r connectors.Registry, cfg *config.Config) {}
