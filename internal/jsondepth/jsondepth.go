// Package jsondepth is the MCP Go SDK's bound on how deep the JSON it
// decodes may nest, for code that must take and refuse what the SDK does:
// the agent endpoint's own reading of requests and the MCP client's of
// results. Its decoder refuses a message nested deeper than SDKLimit
// (internal/json.checkMaxDepth) before it decodes anything.
package jsondepth

import "bytes"

// SDKLimit is the SDK's limit (internal/json's defaultMaxDepth).
const SDKLimit = 1000

// ResultLimit is how deep a tool's result may nest and still be passed on
// parsed, as JSON, rather than as the text it came in: half SDKLimit,
// which an agent's client holds a whole tools/call answer to, leaving room
// for the envelopes around a result (REST's, MCP's) and for decoders that
// recurse (Python's json stops near 1000 levels). Real results nest a few
// dozen deep at most.
const ResultLimit = SDKLimit / 2

// Exceeds reports whether JSON data nests arrays and objects more than
// limit deep, counted as the SDK counts: brackets outside strings, a
// closing one below zero ignored. Data with no more than limit brackets in
// all, as almost all is, is not walked.
func Exceeds(data []byte, limit int) bool {
	if bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) <= limit {
		return false
	}
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}
