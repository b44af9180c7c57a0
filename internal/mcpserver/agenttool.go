package mcpserver

// One attached tool of an agent's build: resolving it, listing its actions
// (bounded by discoveryWait, and kept through a failure for
// retryDiscovery), and making the MCP tool of each action with the key
// argument a non-retryable one takes. The build that gathers them, and the
// cache of builds, are toolset.go's.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// agentTool is one attached tool and its actions.
type agentTool struct {
	id      int64
	base    string // its name, sanitized
	name    string // the {tool_name} part, unique in the agent (disambiguate)
	actions []connectors.Action
	// failedAt is when listing its actions last failed, if the latest
	// attempt did.
	failedAt time.Time
	// unconfigured is set for a tool that needs configuration (first, or
	// again after a reset or a revoked grant): unlisted, but named.
	unconfigured bool
}

// discoveryWait bounds how long a build waits for one tool's actions, and
// retryDiscovery how long after a failure it lists them as they were last
// time (or leaves the tool out) without asking again. A server that does
// not answer thus holds up its agent's list (and every request to the
// agent's endpoint, ping included) for discoveryWait only on the build
// that first lists it (afterwards it keeps its list, or stays out, while
// it is read anew: listing.go), not on every build for the connector's own
// limits (15 s each); its session keeps opening in the background
// meanwhile.
const (
	discoveryWait  = 5 * time.Second
	retryDiscovery = 30 * time.Second
)

// resolvedName is a resolved tool's name: the one it was given, else its
// catalog entry's.
func resolvedName(rt *toolconfig.Resolved) string {
	name := ""
	if rt.Row != nil {
		name = rt.Row.Name
	}
	if name == "" && rt.Entry != nil {
		name = rt.Entry.Name
	}
	return name
}

// discover resolves one attached tool and lists its actions; nil actions
// mean it is left out.
func (s *Server) discover(ctx context.Context, account, id int64, last []connectors.Action, failedAt time.Time) agentTool {
	rt, err := s.opts.Tools.Resolve(toolconfig.ForListing(ctx), account, id)
	if err != nil {
		if p, ok := problem.As(err); !ok || (p.Code != problem.ToolNotConfigured && p.Code != problem.NotFound) {
			s.log.WarnContext(ctx, "mcp: attached tool left out", "tool", id, "error", err)
		}
		// Unlisted, but still named: its name is not another tool's to
		// take while it is being reconfigured (disambiguate).
		var nc *toolconfig.UnconfiguredError
		if errors.As(err, &nc) {
			return agentTool{id: id, base: sanitize(nc.Name), unconfigured: true}
		}
		return agentTool{id: id}
	}
	t := agentTool{id: id, base: sanitize(resolvedName(rt))}
	if !failedAt.IsZero() && time.Since(failedAt) < retryDiscovery {
		t.actions, t.failedAt = last, failedAt
		return t
	}
	key := listKey{account: account, tool: id}
	if rt.Tool != nil {
		key.version = rt.Tool.Version
	}
	p, began := s.lists.start(ctx, key, func(ctx context.Context) ([]connectors.Action, error) {
		_, actions, err := s.opts.Actions.Actions(ctx, account, id)
		return actions, err
	})
	if !p.ended(ctx, last != nil || !failedAt.IsZero(), began) {
		// As it was (listing.go): listed as last time, or left out after a
		// failure, which stays recorded; or, the build out of time, as when
		// listing fails.
		t.actions, t.failedAt = last, failedAt
		if ctx.Err() != nil {
			t.failedAt = time.Now()
		}
		return t
	}
	s.lists.take(key, p)
	actions, err := p.actions, p.err
	if err != nil {
		s.log.WarnContext(ctx, "mcp: listing a tool's actions failed", "tool", id, "reused", last != nil, "error", err)
		t.actions, t.failedAt = last, p.at
		return t
	}
	if actions == nil {
		actions = []connectors.Action{}
	}
	t.actions = actions
	return t
}

// keyName is the argument that carries Quiver's key for an action with
// these input schema properties and required names: idempotency_key, or,
// when the action has an argument of that name itself (which is then passed
// on untouched), quiver_idempotency_key, or the first of
// quiver_idempotency_key_2, _3, … the action does not have either.
func keyName(props map[string]any, required []any) string {
	has := func(n string) bool {
		_, ok := props[n]
		return ok || slices.Contains(required, any(n))
	}
	if !has(keyArg) {
		return keyArg
	}
	name := altKeyArg
	for n := 2; has(name); n++ {
		name = altKeyArg + "_" + strconv.Itoa(n)
	}
	return name
}

// listedTool is action a of agent tool t, listed as name: the MCP tool the
// agent sees, and what a call of it runs (invokeListed). A build lists
// every action so; a call of a tool the build left out lists its one.
func (s *Server) listedTool(account int64, t agentTool, name string, a *connectors.Action) (*mcp.Tool, fastTool, error) {
	tool, key, err := mcpTool(name, a)
	if err != nil {
		return nil, fastTool{}, err
	}
	soundBindings(tool) // headerbind.go
	inv := s.invokeListed(account, t.id, t.base, a.Name, key)
	return tool, fastTool{invoke: inv, headerBound: headerBound(tool), typed: tool.OutputSchema != nil}, nil
}

// mcpTool makes the MCP tool of an action. A non-retryable action's schema
// gains the required key argument, named key (keyName); a retryable action's
// key is "".
func mcpTool(name string, a *connectors.Action) (t *mcp.Tool, key string, err error) {
	schema := map[string]any{}
	if len(a.InputSchema) > 0 && string(a.InputSchema) != "null" {
		if err := json.Unmarshal(a.InputSchema, &schema); err != nil {
			return nil, "", fmt.Errorf("input schema is not a JSON object: %w", err)
		}
	}
	if t, ok := schema["type"]; !ok || admitsObject(t) {
		schema["type"] = "object"
	} else {
		return nil, "", fmt.Errorf("input schema has type %v, not object", t)
	}
	mcpShape(schema)
	desc := a.Description
	if !a.Retryable {
		props, _ := schema["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		req, _ := schema["required"].([]any)
		key = keyName(props, req)
		kd := keyDescription
		if key != keyArg {
			kd += " Named " + key + " because this action has an " + keyArg + " argument of its own, which is passed to it unchanged."
		}
		props[key] = map[string]any{"type": "string", "minLength": 1, "maxLength": 255,
			"pattern": keyPattern, "description": kd}
		schema["properties"] = props
		if !slices.Contains(req, any(key)) {
			req = append(req, key)
		}
		schema["required"] = req
		fitKey(schema, key, true) // keyschema.go
		desc = strings.TrimSpace(desc + "\n\nNot safe to retry blindly: pass a unique " + key + "; retrying with the same key never runs it twice.")
	}
	t = &mcp.Tool{Name: name, Title: a.Title, Description: desc, InputSchema: schema}
	if len(a.OutputSchema) > 0 {
		var out map[string]any
		if json.Unmarshal(a.OutputSchema, &out) == nil && out != nil {
			// MCP's output schema describes structured content, an
			// object: one of another type is left out, and the action
			// is listed without it.
			if typ, ok := out["type"]; !ok || admitsObject(typ) {
				out["type"] = "object"
				mcpShape(out)
				t.OutputSchema = out // typedResult
			}
		}
	}
	if an := a.Annotations; an != nil {
		t.Title = cmp.Or(a.Title, an.Title) // MCP's order: the tool's title, then its annotations'
		t.Annotations = &mcp.ToolAnnotations{Title: an.Title, DestructiveHint: an.DestructiveHint, OpenWorldHint: an.OpenWorldHint}
		if an.ReadOnlyHint != nil {
			t.Annotations.ReadOnlyHint = *an.ReadOnlyHint
		}
		if an.IdempotentHint != nil {
			t.Annotations.IdempotentHint = *an.IdempotentHint
		}
	}
	return t, key, nil
}

// admitsObject reports whether a schema's type keyword admits objects:
// "object", or a list of types that has it (["object", "null"]). MCP's
// Tool has its schemas' type "object" alone, and a client that checks the
// listing refuses it whole else; arguments and structured content are
// objects all the same, so such a schema is listed as of type "object".
func admitsObject(typ any) bool {
	if list, ok := typ.([]any); ok {
		return slices.Contains(list, any("object"))
	}
	return typ == "object"
}

// mcpShape makes an input or output schema what MCP's Tool has beyond its
// type: properties an object of schemas, required an array of names. What
// a tool's schema has otherwise is mended for the listing (a property's
// schema true or false, which JSON Schema allows, becomes {} or {"not":
// {}}, and one of any other type, which no JSON Schema allows, {}) or left
// out (properties that are not an object, required that is not an array,
// and names in it that are not strings): a client
// that checks the listing refuses it whole else (the TypeScript SDK's), so
// one tool's mistake would hide every tool of the agent. Arguments are
// still checked against the tool's own schema, and the tool judges them.
func mcpShape(schema map[string]any) {
	if p, ok := schema["properties"]; ok {
		props, isObject := p.(map[string]any)
		if !isObject {
			delete(schema, "properties")
		}
		for name, v := range props {
			switch v := v.(type) {
			case map[string]any:
			case bool:
				props[name] = map[string]any{}
				if !v {
					props[name] = map[string]any{"not": map[string]any{}}
				}
			default:
				props[name] = map[string]any{}
			}
		}
	}
	if r, ok := schema["required"]; ok {
		names, isArray := r.([]any)
		if !isArray {
			delete(schema, "required")
			return
		}
		schema["required"] = slices.DeleteFunc(names, func(n any) bool {
			_, isString := n.(string)
			return !isString
		})
	}
}
