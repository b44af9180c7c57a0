package mcp

// How the fast path reads one JSON-RPC message of a tools/call answer: as
// the SDK's client reads it, in one decode for the usual message.

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// wireMessage is one JSON-RPC message as received.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
	// request is set when the message has a method member, even "" or
	// null: the SDK reads it as a request then, never as an answer.
	request bool
}

// decodeMessage decodes the first JSON value of data as the SDK's client
// reads a message (jsonrpc.DecodeMessage). The usual message is decoded
// once here; one the SDK might read otherwise goes to DecodeMessage
// itself, errors and all: a version other than "2.0", an error member
// (whose fields encoding/json would match in any case), a top-level key
// spelt other than as the SDK's decoder matches it (encoding/json would
// take "ID" or "Result" too; an escape or a byte past ASCII is not looked
// into), an answer without an ID or an ID the SDK does not take, nesting
// past the SDK's bound (internal/json.checkMaxDepth).
func decodeMessage(data []byte, m *wireMessage) error {
	method, plain := scanMessage(data)
	if plain && decodeFirst(data, m) == nil && m.JSONRPC == "2.0" && m.Error == nil && plainID(m.ID, method) {
		m.request = method
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return err
	}
	*m = wireMessage{JSONRPC: "2.0"}
	var id jsonrpc.ID
	switch msg := msg.(type) {
	case *jsonrpc.Request:
		m.Method, m.request, id = msg.Method, true, msg.ID
	case *jsonrpc.Response:
		m.Result, id = msg.Result, msg.ID
		if msg.Error != nil && !errors.As(msg.Error, &m.Error) {
			m.Error = &jsonrpc.Error{Message: msg.Error.Error()}
		}
	}
	if id.IsValid() {
		m.ID, _ = json.Marshal(id.Raw())
	}
	return nil
}

// plainID reports whether an ID as decoded is one the SDK reads as it is
// written: a number a float64 holds, a string without escapes, or (for a
// request, a notification then) none.
func plainID(raw json.RawMessage, request bool) bool {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return request
	case raw[0] == '"':
		return bytes.IndexByte(raw, '\\') < 0
	case raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9':
		_, err := strconv.ParseFloat(string(raw), 64)
		return err == nil
	}
	return false
}

// scanMessage looks over data, whose first JSON value is a message: method
// is set if that object has a "method" key, and plain is false if one of
// its keys has an escape or a byte past ASCII or matches a member of
// wireMessage only when case is ignored, or if data nests deeper than the
// SDK reads (which it checks over all of data). Strings are skipped with
// IndexByte: an answer is mostly the text of its content.
func scanMessage(data []byte) (method, plain bool) {
	depth, done, key := 0, false, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			end := i + 1
			for {
				j := bytes.IndexByte(data[end:], '"')
				if j < 0 {
					return method, true // cut off: the decoder says what is wrong
				}
				end += j
				n := 0
				for n < end-i-1 && data[end-1-n] == '\\' {
					n++
				}
				if n%2 == 0 {
					break
				}
				end++
			}
			if key && depth == 1 && !done {
				k := data[i+1 : end]
				for _, b := range k {
					if b == '\\' || b >= 0x80 {
						return method, false
					}
				}
				for _, name := range [...]string{"jsonrpc", "id", "method", "result", "error"} {
					if len(k) == len(name) && string(k) != name && bytes.EqualFold(k, []byte(name)) {
						return method, false
					}
				}
				method = method || string(k) == "method"
			}
			key, i = false, end
		case '{', '[':
			if depth++; depth > 1000 {
				return method, false
			}
			key = c == '{' && depth == 1
		case '}', ']':
			if depth > 0 {
				if depth--; depth == 0 {
					done = true
				}
			}
		case ',':
			key = depth == 1
		}
	}
	return method, true
}
