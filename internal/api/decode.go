package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// readBody reads the request body within the size limit.
func (s *Server) readBody(c *gin.Context) ([]byte, error) {
	if c.Request.ContentLength > s.BodyLimit {
		return nil, tooLarge(s.BodyLimit)
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.BodyLimit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(s.BodyLimit)
	}
	if err != nil {
		return nil, &problem.Error{Code: problem.BadRequest, Message: "The request body could not be read.", Err: err}
	}
	return b, nil
}

// limitBody holds every authenticated request to the body limit before its
// handler runs. A route that reads no body (a GET, a DELETE, reset-config)
// would otherwise act on a request whose body is over the limit and ignore
// it: a DELETE would delete. A body of unknown length (chunked) is read here,
// within the limit, and handed on from memory; a declared one over the
// limit is refused unread.
func (s *Server) limitBody(c *gin.Context) {
	if n := c.Request.ContentLength; n >= 0 && n <= s.BodyLimit {
		c.Next()
		return
	}
	b, err := s.readBody(c) // one over a declared length is refused unread
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(b))
	c.Request.ContentLength = int64(len(b))
	c.Request.TransferEncoding = nil
	c.Next()
}

func tooLarge(limit int64) error {
	return problem.New(problem.PayloadTooLarge, "The request body is over the %d-byte limit.", limit)
}

// object reads the body as a JSON object of raw members. An empty body is
// an empty object when allowEmpty.
func (s *Server) object(c *gin.Context, allowEmpty bool) (map[string]json.RawMessage, error) {
	b, err := s.readBody(c)
	if err != nil {
		return nil, err
	}
	if allowEmpty && len(bytes.TrimSpace(b)) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	var m map[string]json.RawMessage
	err = json.Unmarshal(b, &m)
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return nil, problem.New(problem.InvalidJSON, "The request body is not valid JSON.")
	}
	// The call endpoint's scanner refuses what encoding/json lets through
	// silently: a member given twice (json would keep the last), invalid
	// UTF-8, and a lone surrogate (\ud800 without its pair), which is no
	// text: decoding would silently store U+FFFD in its place.
	if _, cerr := calls.CanonicalText(b); errors.Is(cerr, calls.ErrLoneSurrogate) {
		return nil, cerr
	} else if cerr != nil {
		return nil, problem.New(problem.InvalidJSON, "The request body is not valid JSON: %v.", cerr)
	}
	if err != nil || m == nil {
		return nil, problem.New(problem.InvalidJSON, "The request body must be a JSON object.")
	}
	return m, nil
}

// fields decodes members of a body object into typed targets, collecting a
// message per field that is not valid. A null member is of the wrong type:
// no field takes null.
type fields struct {
	m   map[string]json.RawMessage
	bad map[string]string
}

func newFields(m map[string]json.RawMessage) *fields { return &fields{m: m, bad: map[string]string{}} }

// get decodes member name into dst; it reports whether the member was given.
func (f *fields) get(name string, dst any, want string) bool {
	raw, ok := f.m[name]
	if !ok {
		return false
	}
	if string(raw) == "null" { // json.Unmarshal gives a member's value without surrounding space
		f.bad[name] = "must be " + want + ", not null"
		return false
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		f.bad[name] = "must be " + want
		return false
	}
	if s, ok := dst.(*string); ok && strings.IndexByte(*s, 0) >= 0 {
		f.bad[name] = noNUL // no text column of Postgres can hold it
		return false
	}
	return true
}

// noNUL is the message for a string holding U+0000.
const noNUL = "must not contain the character U+0000 (NUL)"

func (f *fields) err() error {
	if len(f.bad) == 0 {
		return nil
	}
	return problem.Validation("Some fields are not valid.", f.bad)
}

// pathID reads an integer ID from the path; a malformed one is a 404 like
// any other ID that names nothing.
func pathID(c *gin.Context, what string) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != c.Param("id") { // one spelling per ID: not +1 or 01
		return 0, problem.New(problem.NotFound, "No %s with ID %s.", what, problem.Quote(c.Param("id")))
	}
	return id, nil
}

// The lists a cursor can continue, as named in store.Page.List. A filter
// joins the name (see filtered): a cursor continues only the list and
// filters it was made under.
const (
	agentList   = "agents"
	toolList    = "tools"
	callList    = "calls"
	catalogList = "catalog"
)

// filtered names list under the filter ?param=value.
func filtered(list, param, value string) string { return list + "?" + param + "=" + value }

// page reads ?limit= and ?cursor= for the list named list, whose filters
// are the other parameters it takes. bad holds what the caller found wrong
// with them (nil: nothing); page adds its own findings, a parameter the
// list does not take among them (a misspelt filter, read as none, would
// widen the answer), and all of them are one 422.
func page(c *gin.Context, list string, bad map[string]string, filters ...string) (store.Page, error) {
	p := store.Page{Limit: 50, List: list}
	if bad == nil {
		bad = map[string]string{}
	}
	q := c.Request.URL.Query() // parsed once, for the names and the values
	for name := range q {
		if name != "limit" && name != "cursor" && !slices.Contains(filters, name) {
			bad[name] = "is not a parameter of this list, which takes " + listParams(filters)
		}
	}
	// An empty ?limit= is refused like any value that is not an integer: it is
	// the default only when it is left out.
	if vs, given := q["limit"]; given {
		n, err := strconv.Atoi(vs[0])
		if err != nil || n < 1 || n > 200 {
			bad["limit"] = "must be an integer from 1 to 200"
		} else {
			p.Limit = n
		}
	}
	after, err := store.DecodeCursor(list, q.Get("cursor"))
	if err != nil {
		bad["cursor"] = cursorMessage(err)
	}
	p.After = after
	if len(bad) > 0 {
		return p, problem.Validation(listParamsInvalid, bad)
	}
	return p, nil
}

// listParams names the parameters a list with filters takes.
func listParams(filters []string) string {
	names := append(slices.Clone(filters), "limit", "cursor")
	for i, n := range names {
		names[i] = "'" + n + "'"
	}
	if len(names) == 2 {
		return names[0] + " and " + names[1]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// listParamsInvalid is the message of a 422 for a list's query parameters.
const listParamsInvalid = "The list parameters are not valid."

// cursorMessage is fields.cursor for a cursor store.DecodeCursor refused.
func cursorMessage(err error) string {
	if errors.Is(err, store.ErrCursorOtherList) {
		return "was made for another list, or for this one with other filters; pass a cursor only with the list and filters that gave it"
	}
	return "is not a cursor this server made"
}

// cursor renders next_cursor: null at the end.
func cursor(next string) any {
	if next == "" {
		return nil
	}
	return next
}
