package mcpserver

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/quiverhq/quiver/connectors"
)

// How an agent's tools and actions become MCP tool names: the rule is in
// the package doc.

// sanitize makes a tool's name its {tool_name} part: characters MCP
// refuses become '_', runs of '_' become one (so the part never holds "__",
// which separates it from the action), '_' is trimmed at both ends, and the
// whole is cut to maxToolNameLen; "tool" if nothing is left.
func sanitize(name string) string {
	b := make([]byte, 0, len(name))
	for _, c := range []byte(strings.TrimSpace(name)) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			c = '_'
		}
		if c == '_' && len(b) > 0 && b[len(b)-1] == '_' {
			continue
		}
		b = append(b, c)
	}
	s := strings.Trim(string(b), "_")
	if len(s) > maxToolNameLen {
		s = strings.TrimRight(s[:maxToolNameLen], "_")
	}
	if s == "" {
		s = "tool"
	}
	return s
}

// disambiguate sets each tool's name, unique among the agent's tools and
// decided by the set of tools alone, never by their order: of the tools
// whose names sanitize the same, the lowest ID keeps the plain name and
// every other takes the suffix _{id}; a suffixed name that is taken
// (another tool's plain name, say a tool literally named "up_7") takes a
// further _2, _3, … in ID order. Plain names are given first, so a suffix
// never takes one. A name never holds "__" nor ends with '_'.
func disambiguate(tools []agentTool) {
	owner := map[string]int64{}
	for _, t := range tools {
		if id, ok := owner[t.base]; !ok || t.id < id {
			owner[t.base] = t.id
		}
	}
	taken := make(map[string]bool, len(tools))
	for base := range owner {
		taken[base] = true
	}
	order := make([]int, len(tools))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(tools[a].id, tools[b].id) })
	for _, i := range order {
		t := &tools[i]
		if owner[t.base] == t.id {
			t.name = t.base
			continue
		}
		suffix := "_" + strconv.FormatInt(t.id, 10)
		name := withSuffix(t.base, suffix, maxToolNameLen)
		for n := 2; taken[name]; n++ {
			name = withSuffix(t.base, suffix+"_"+strconv.Itoa(n), maxToolNameLen)
		}
		taken[name] = true
		t.name = name
	}
}

// withSuffix is base, cut so that base+suffix fits max, then suffix. A '_'
// left at the cut is dropped, so a tool part never gains "__".
func withSuffix(base, suffix string, max int) string {
	if len(base)+len(suffix) > max {
		base = strings.TrimRight(base[:max-len(suffix)], "_")
	}
	return base + suffix
}

// toolName is {tool}__{action}, with characters MCP refuses in the action
// replaced and the whole cut to MCP's limit.
func toolName(tool, action string) string {
	b := []byte(tool + "__" + action)
	for i := len(tool) + 2; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > maxNameLen {
		b = b[:maxNameLen]
	}
	return string(b)
}

// actionNames returns the MCP name of each of a tool's actions, unique
// within the tool and decided by the set of action names alone: an action
// whose name toolName keeps as it is owns that name; of actions that map to
// one name only by replacing characters or cutting at maxNameLen
// ("a/b" and "a_b", or names sharing their first 128 characters), the
// one owning it is the action named so, else the least name in byte order,
// and each other takes the suffix _{8 hex digits of the FNV-1a hash of its
// name} (and _2, _3, … if that is taken). "" marks a repeat of an earlier
// action's very name, which cannot be called apart from it.
//
// Names of different tools never meet: a tool part holds no "__" and does
// not end with '_', so a name's first "__" ends its tool part.
func actionNames(tool string, actions []connectors.Action) []string {
	names := make([]string, len(actions))
	plain := make([]string, len(actions))
	owner := map[string]int{} // plain name → index of the action owning it
	seen := make(map[string]bool, len(actions))
	for i := range actions {
		a := actions[i].Name
		if seen[a] {
			plain[i] = ""
			continue
		}
		seen[a] = true
		p := toolName(tool, a)
		plain[i] = p
		j, ok := owner[p]
		if !ok || ownsBetter(tool, p, a, actions[j].Name) {
			owner[p] = i
		}
	}
	taken := make(map[string]bool, len(owner))
	for p, i := range owner {
		taken[p] = true
		names[i] = p
	}
	var rest []int
	for i := range actions {
		if plain[i] != "" && names[i] == "" {
			rest = append(rest, i)
		}
	}
	slices.SortFunc(rest, func(a, b int) int { return strings.Compare(actions[a].Name, actions[b].Name) })
	for _, i := range rest {
		suffix := hashSuffix(actions[i].Name)
		name := cutFor(plain[i], suffix)
		for n := 2; taken[name]; n++ {
			name = cutFor(plain[i], suffix+"_"+strconv.Itoa(n))
		}
		taken[name] = true
		names[i] = name
	}
	return names
}

// hashSuffix is the suffix that sets apart an action whose plain name
// another action of its tool owns: _{8 hex digits of the FNV-1a hash of its
// name}.
func hashSuffix(action string) string {
	h := fnv.New32a()
	h.Write([]byte(action))
	return fmt.Sprintf("_%08x", h.Sum32())
}

// namesAction reports whether name could be an MCP name actionNames gives
// the action, under whatever tool: {tool}__{action} as toolName makes it,
// or that with the action's hash suffix (and a further _2, _3, …). The
// tool part is whatever precedes the name's first "__".
func namesAction(name, action string) bool {
	tool, _, ok := strings.Cut(name, "__")
	if !ok || tool == "" {
		return false
	}
	plain := toolName(tool, action)
	suffix := hashSuffix(action)
	if name == plain || name == cutFor(plain, suffix) {
		return true
	}
	i := strings.LastIndexByte(name, '_')
	n := name[i+1:]
	if n == "" || len(n) > 9 || strings.Trim(n, "0123456789") != "" || n[0] == '0' {
		return false
	}
	return name == cutFor(plain, suffix+"_"+n)
}

// ownsBetter reports whether action a rather than action b owns the plain
// name p: the action toolName keeps unchanged, else the lesser name.
func ownsBetter(tool, p, a, b string) bool {
	exact := tool + "__"
	aExact, bExact := p == exact+a, p == exact+b
	if aExact != bExact {
		return aExact
	}
	return a < b
}

// cutFor is name cut so that name+suffix fits maxNameLen, then suffix.
func cutFor(name, suffix string) string {
	if len(name)+len(suffix) > maxNameLen {
		name = name[:maxNameLen-len(suffix)]
	}
	return name + suffix
}

// keyDescription is the schema description of the key argument.
const keyDescription = "Your unique key for this operation (1-255 printable ASCII characters). " +
	"This action is not safe to repeat: a retry with the same key returns the first outcome instead of running again; " +
	"use a new key only for a new operation."

// keyPattern is 1–255 printable ASCII without leading or trailing spaces;
// the length is checked by minLength and maxLength.
const keyPattern = `^[!-~]([ -~]*[!-~])?$`
