package catalog

import (
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// What of an entry the configuration form (internal/toolconfig) and the
// OAuth flow (internal/oauth) apply, checked here so that an entry cannot
// say what they would ignore or override: such an entry loads and reads
// well, and misbehaves only when a user reaches it.

// patternTypes are the field types whose answers the form matches against
// the field's pattern; it takes the others (objects, booleans, integers)
// as JSON values and never sees a pattern.
var patternTypes = []FieldType{FieldString, FieldURL, FieldEnum}

// flowAuthParams are the authorization request parameters the OAuth flow
// sets itself: one in extra_auth_params would replace the flow's (a fixed
// state, a plain PKCE challenge, another redirect) or its scopes.
var flowAuthParams = []string{"client_id", "code_challenge", "code_challenge_method", "redirect_uri", "response_type", "scope", "state"}

// fieldFlow checks a field's pattern and default against what the form
// does with them: a default is stored as the answer, unchecked, when the
// user gives none, so it must be an answer the form would accept.
func (v *validator) fieldFlow(f *Field, at func(rest ...any) string) {
	if f.Pattern != "" && !slices.Contains(patternTypes, f.Type) {
		v.add(at("pattern"), "a pattern applies to string, url and enum fields only; the form would not enforce it on a %s field", f.Type)
	}
	if f.Default == "" {
		return
	}
	switch {
	case f.Secret:
		v.add(at("default"), "a secret field has no default: the catalog is public, and so would the secret be")
		return
	case f.Type == FieldObject:
		v.add(at("default"), "an object field has no default")
		return
	case f.Type == FieldBoolean && f.Default != "true" && f.Default != "false":
		v.add(at("default"), "%q is not true or false", f.Default)
	case f.Type == FieldInteger:
		if _, err := strconv.ParseInt(f.Default, 10, 64); err != nil {
			v.add(at("default"), "%q is not an integer", f.Default)
		}
	case f.Type == FieldURL && !isHTTPURL(f.Default):
		v.add(at("default"), "%q is not an http:// or https:// URL with a host", f.Default)
	}
	if f.Pattern != "" && slices.Contains(patternTypes, f.Type) {
		if re, err := regexp.Compile(f.Pattern); err == nil && !re.MatchString(f.Default) {
			v.add(at("default"), "%q does not match the pattern %s", f.Default, f.Pattern)
		}
	}
}

// oauthFlow checks an oauth: block against the flow, which always sends a
// PKCE (S256) challenge and sets the protocol's own parameters.
func (v *validator) oauthFlow(p *OAuthProvider) {
	if !p.PKCE {
		v.add("oauth.pkce", "Quiver always uses PKCE (S256) at a provider; set pkce: true")
	}
	keys := make([]string, 0, len(p.ExtraAuthParams))
	for k := range p.ExtraAuthParams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(flowAuthParams, strings.ToLower(k)) {
			continue
		}
		if strings.EqualFold(k, "scope") {
			v.add("oauth.extra_auth_params."+k, "is set by the authorization flow from scopes; list them there")
			continue
		}
		v.add("oauth.extra_auth_params."+k, "is set by the authorization flow itself and cannot be overridden")
	}
}

// providerConflicts reports entries that name one provider with other
// endpoints than an earlier entry: the platform's client and the
// QUIVER_OAUTH_<PROVIDER>_* overrides are per provider, so every entry of
// a provider must reach it at the same place, the same way.
func providerConflicts(entries []fileEntry) Problems {
	var problems Problems
	first := map[string]fileEntry{}
	for _, fe := range entries {
		p := fe.entry.OAuth
		if p == nil || p.Provider == "" {
			continue
		}
		prev, seen := first[p.Provider]
		if !seen {
			first[p.Provider] = fe
			continue
		}
		q := prev.entry.OAuth
		for _, c := range []struct{ key, got, want string }{
			{"authorization_url", p.AuthorizationURL, q.AuthorizationURL},
			{"token_url", p.TokenURL, q.TokenURL},
			{"token_auth", tokenAuthOrDefault(p.TokenAuth), tokenAuthOrDefault(q.TokenAuth)},
			{"revocation_url", p.RevocationURL, q.RevocationURL},
		} {
			if c.got != c.want {
				problems = append(problems, &Problem{File: fe.file, Field: "oauth." + c.key,
					Message: "provider " + quote(p.Provider) + " has " + c.key + " " + quote(c.want) + " in " + prev.file +
						": one platform client and one set of QUIVER_OAUTH_" + strings.ToUpper(p.Provider) + "_* variables serve every entry of a provider"})
			}
		}
	}
	return problems
}

func tokenAuthOrDefault(s string) string {
	if s == "" {
		return TokenAuthPost
	}
	return s
}

// isHTTPURL reports whether raw is an http:// or https:// URL with a host
// and, if it names one, a port from 1 to 65535: what the form accepts of a
// url field.
func isHTTPURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return false
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		return err == nil && n >= 1 && n <= 65535
	}
	return true
}

// flow checks what the configuration flow relies on of an entry's steps:
// only a form step is verified (an oauth step completes at the callback,
// whatever verify says), and a custom MCP tool's first step is a form that
// asks for the server's URL, which the mcp connector and OAuth discovery
// read as the answer named url.
func (v *validator) flow(e *Entry) {
	for i := range e.Steps {
		if s := &e.Steps[i]; s.Verify && s.Type != StepForm {
			v.add(field("steps", i, "verify"), "only a form step is verified; a %s step completes without", s.Type)
		}
	}
	if e.Type != TypeCustomMCP {
		return
	}
	if len(e.Steps) == 0 || e.Steps[0].Type != StepForm {
		v.add(field("steps", 0, "type"), "a custom_mcp tool's first step is the form that asks for the server's url")
		return
	}
	s := &e.Steps[0]
	f, ok := s.Field("url")
	if !ok {
		v.add(field("steps", 0, "fields"), "a custom_mcp tool's first step asks for the server's url in a field named url")
		return
	}
	j := slices.IndexFunc(s.Fields, func(x Field) bool { return x.Name == "url" })
	if f.Type != FieldURL {
		v.add(field("steps", 0, "fields", j, "type"), "the url of a custom_mcp tool is a url field, not %s", f.Type)
	}
	if !f.Required {
		v.add(field("steps", 0, "fields", j, "required"), "the url of a custom_mcp tool is required")
	}
}
