package app

import (
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/browser"
	"github.com/quiverhq/quiver/connectors/httprequest"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/config"
)

// addBuiltins registers the builtin connectors that reach user-chosen URLs;
// each dials through the egress guard.
func addBuiltins(r connectors.Registry, cfg *config.Config) {
	r["browser"] = browser.New(browser.Options{AllowPrivate: cfg.AllowPrivate})
	r["http-request"] = httprequest.New(httprequest.Options{AllowPrivate: cfg.AllowPrivate, MaxResponseBytes: 2 * calls.MaxResult})
}
