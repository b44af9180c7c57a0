package toolconfig

import (
	"time"

	"github.com/quiverhq/quiver/catalog"
)

// View is a connected tool as the API shows it. Secrets are masked.
type View struct {
	ID                    int64          `json:"id"`
	MCPTool               string         `json:"mcp_tool"`
	Name                  string         `json:"name"`
	Type                  catalog.Type   `json:"type"`
	IsConfigured          bool           `json:"is_configured"`
	NextConfigurationStep *StepView      `json:"next_configuration_step"`
	Config                map[string]any `json:"config"`
	CreatedAt             time.Time      `json:"created_at"`
	UpdatedAt             time.Time      `json:"updated_at"`
}

// StepView is the step a tool waits at. Index is 1-based.
type StepView struct {
	Step        string           `json:"step"`
	Index       int              `json:"index"`
	Total       int              `json:"total"`
	Type        catalog.StepType `json:"type"`
	Title       string           `json:"title"`
	Description string           `json:"description"`
	Fields      []catalog.Field  `json:"fields,omitempty"`
	// AuthorizationURL is set on oauth steps whose provider is set up.
	AuthorizationURL string `json:"authorization_url,omitempty"`
	// Provider names the OAuth provider of an oauth step.
	Provider string `json:"provider,omitempty"`
	// Error is set when the step cannot be completed on this server, e.g.
	// "oauth_provider_not_configured".
	Error string `json:"error,omitempty"`
}

// ProviderNotConfigured is the StepView.Error of an oauth step whose
// provider has no client on this server.
const ProviderNotConfigured = "oauth_provider_not_configured"

// ReadOnlyKey is the StepView.Error of an oauth step read with a read-only
// key, which is given no authorization URL.
const ReadOnlyKey = "read_only_key"

// toUTC drops the monotonic reading and zone so JSON shows RFC 3339 UTC.
func toUTC(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }
