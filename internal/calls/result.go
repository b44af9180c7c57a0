package calls

// The 200 body of a dispatched call: written once, stored and replayed as
// these bytes.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/quiverhq/quiver/connectors"
)

// ResultTypeMCPContent is the 200 body's result_type when result is the MCP
// content array a tool answered with rather than JSON it produced; the
// member is absent otherwise.
const ResultTypeMCPContent = "mcp_content"

// maxNesting is how deeply encoding/json decodes arrays and objects.
const maxNesting = 10000

// nestedUnder reports whether JSON data surely nests arrays and objects no
// deeper than n: it is no longer than n bytes, or has no more than n
// brackets that open one (those in strings counted too).
func nestedUnder(data []byte, n int) bool {
	return len(data) <= n || bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) <= n
}

// encodeResult writes the 200 body once; these bytes are what is stored and
// replayed. answer holds the members it wrote from r, unless the body may
// nest them too deeply to be decoded (nil: decode the body, as for a
// replay).
func encodeResult(callID string, toolID int64, action string, r connectors.Result, dur time.Duration) (body []byte, answer *Answer) {
	content, structured := r.Content, r.Structured
	isError, mcpContent := r.IsError, r.MCPContent
	if len(content) == 0 {
		content, mcpContent = json.RawMessage("null"), false
	}
	if isError || !json.Valid(structured) || !utf8.Valid(structured) {
		structured = nil
	}
	if !utf8.Valid(content) {
		// json.Valid lets bytes that are not UTF-8 through inside strings
		// (the only place valid JSON can hold them), but JSON text is UTF-8
		// and a client's decoder may refuse the whole body for them: each
		// run of them becomes U+FFFD, as lenient decoders read them, and the
		// rest keeps its exact text. Before the size check: it may grow.
		content = bytes.ToValidUTF8(content, []byte("\uFFFD"))
	}
	if len(content)+len(structured) > MaxResult {
		msg, _ := json.Marshal("The tool's result was " + strconv.Itoa(len(content)) + " bytes, over the 8 MiB limit; it was not kept.")
		content = append(append([]byte(`{"error":"result_too_large","message":`), msg...), '}')
		isError, mcpContent, structured = true, false, nil
	} else if !json.Valid(content) {
		s, _ := json.Marshal(string(content))
		content, mcpContent = s, false
	}
	var buf bytes.Buffer
	buf.Grow(len(content) + len(structured) + 160)
	buf.WriteString(`{"call_id":`)
	buf.Write(strconv.AppendQuote(buf.AvailableBuffer(), callID))
	buf.WriteString(`,"tool":`)
	buf.WriteString(strconv.FormatInt(toolID, 10))
	buf.WriteString(`,"action":`)
	a, _ := json.Marshal(action)
	buf.Write(a)
	buf.WriteString(`,"is_error":`)
	buf.WriteString(strconv.FormatBool(isError))
	buf.WriteString(`,"result":`)
	buf.Write(content)
	if mcpContent {
		buf.WriteString(`,"result_type":"` + ResultTypeMCPContent + `"`)
	}
	if structured != nil {
		buf.WriteString(`,"structured_content":`)
		buf.Write(structured)
	}
	buf.WriteString(`,"duration_ms":`)
	buf.WriteString(strconv.FormatInt(dur.Milliseconds(), 10))
	buf.WriteString("}\n")
	if nestedUnder(content, maxNesting-1) && nestedUnder(structured, maxNesting-1) {
		// As a decoder of the body would read it: JSON's whitespace around
		// a value is not the value's.
		answer = &Answer{CallID: callID, IsError: isError, Result: bytes.TrimSpace(content),
			StructuredContent: bytes.TrimSpace(structured)}
		if mcpContent {
			answer.ResultType = ResultTypeMCPContent
		}
	}
	return buf.Bytes(), answer
}
