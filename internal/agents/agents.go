// Package agents owns agents: their fields, their status and the ordered
// list of connected tools attached to them. It checks that every attached
// tool belongs to the account; it never reaches a tool itself.
package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// Status is an agent's lifecycle status.
type Status string

// The statuses an agent can have.
const (
	Draft  Status = "draft"
	Active Status = "active"
	Paused Status = "paused"
)

// Limits on agent fields.
const (
	MaxNameLen = 200
	MaxGoalLen = 10_000
	MaxTools   = 100
)

// Store is the persistence agents need.
type Store interface {
	CreateAgent(ctx context.Context, a *store.Agent) error
	GetAgent(ctx context.Context, accountID, id int64) (*store.Agent, error)
	ListAgents(ctx context.Context, accountID int64, p store.Page) ([]store.Agent, string, error)
	UpdateAgent(ctx context.Context, accountID, id int64, u store.AgentUpdate) (*store.Agent, error)
	DeleteAgent(ctx context.Context, accountID, id int64) error
	ExistingToolIDs(ctx context.Context, accountID int64, ids []int64) (map[int64]bool, error)
}

var _ Store = (*store.Store)(nil)

// Agent is an agent as the API shows it.
type Agent struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Goal      string    `json:"goal"`
	Status    Status    `json:"status"`
	Tools     []int64   `json:"tools"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Input holds the fields of a create or update; nil means not given.
type Input struct {
	Name   *string
	Goal   *string
	Status *string
	Tools  *[]int64
}

// Service manages agents.
type Service struct{ store Store }

// New returns a Service.
func New(s Store) *Service { return &Service{store: s} }

func view(a *store.Agent) *Agent {
	tools := a.Tools
	if tools == nil {
		tools = []int64{}
	}
	return &Agent{ID: a.ID, Name: a.Name, Goal: a.Goal, Status: Status(a.Status), Tools: tools,
		CreatedAt: a.CreatedAt.UTC().Truncate(time.Second), UpdatedAt: a.UpdatedAt.UTC().Truncate(time.Second)}
}

// OneLine is the message for a name holding a control character. A name is
// a label shown on one line (the agent MCP server's title, a tool list), as
// an account's name is; a goal may run over several lines.
const OneLine = "must be one line of text, without control characters"

// HasControl reports whether s holds a control character (C0, DEL or C1)
// or Unicode's line or paragraph separator: what breaks a line, or drives a
// terminal, where the text is shown.
func HasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '\u2028' || r == '\u2029'
	})
}

// Blank reports whether s shows nothing: it holds only white space,
// invisible format characters (zero-width spaces and joiners, a byte-order
// mark) and the other characters a renderer draws as nothing (Unicode's
// default-ignorable ones: Hangul fillers, the combining grapheme joiner,
// variation selectors; and the Braille blank, drawn as a space), so a name
// of it is no name.
func Blank(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) &&
			!unicode.Is(unicode.Variation_Selector, r) && r != '\u2800'
	})
}

func notFound(id int64) *problem.Error {
	return problem.New(problem.NotFound, "No agent with ID %d.", id)
}

// Check validates in's fields as Create (creating: a name is required) or
// Update does, without changing anything: the API also calls it to report
// every bad field at once when some did not even decode.
func (s *Service) Check(ctx context.Context, accountID int64, in Input, creating bool) error {
	bad := map[string]string{}
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		switch {
		case Blank(n):
			bad["name"] = "must not be empty" // or only characters that show nothing
		case utf8.RuneCountInString(n) > MaxNameLen:
			bad["name"] = fmt.Sprintf("must be at most %d characters", MaxNameLen)
		case HasControl(n):
			bad["name"] = OneLine
		}
		*in.Name = n
	} else if creating {
		bad["name"] = "is required"
	}
	if in.Goal != nil && utf8.RuneCountInString(*in.Goal) > MaxGoalLen {
		bad["goal"] = fmt.Sprintf("must be at most %d characters", MaxGoalLen)
	}
	if in.Status != nil {
		switch Status(*in.Status) {
		case Draft, Active, Paused:
		default:
			bad["status"] = "must be draft, active or paused"
		}
	}
	if in.Tools != nil {
		msg, err := s.checkTools(ctx, accountID, *in.Tools)
		if err != nil {
			return err // the database, not the input: 503 when it is down
		}
		if msg != "" {
			bad["tools"] = msg
		}
	}
	if len(bad) > 0 {
		return problem.Validation("Some agent fields are not valid.", bad)
	}
	return nil
}

// checkTools refuses a tool list whole if any ID is not the account's or
// is listed twice: msg names every such ID, so that one answer says all
// that must change. err is the store's, when the IDs could not be looked up.
func (s *Service) checkTools(ctx context.Context, accountID int64, ids []int64) (msg string, err error) {
	if len(ids) > MaxTools {
		return fmt.Sprintf("must list at most %d tools", MaxTools), nil
	}
	seen := make(map[int64]bool, len(ids))
	var unique []int64
	var twice []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		} else if !slices.Contains(twice, strconv.FormatInt(id, 10)) {
			twice = append(twice, strconv.FormatInt(id, 10))
		}
	}
	found, err := s.store.ExistingToolIDs(ctx, accountID, unique)
	if err != nil {
		return "", err
	}
	var missing []string
	for _, id := range unique {
		if !found[id] {
			missing = append(missing, strconv.FormatInt(id, 10))
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "unknown tool IDs: "+strings.Join(missing, ", "))
	}
	if len(twice) > 0 {
		problems = append(problems, "tool IDs listed more than once: "+strings.Join(twice, ", "))
	}
	return strings.Join(problems, "; "), nil
}

// Create makes an agent.
func (s *Service) Create(ctx context.Context, accountID int64, in Input) (*Agent, error) {
	if err := s.Check(ctx, accountID, in, true); err != nil {
		return nil, err
	}
	a := &store.Agent{AccountID: accountID, Name: *in.Name, Status: string(Draft), Tools: []int64{}}
	if in.Goal != nil {
		a.Goal = *in.Goal
	}
	if in.Status != nil {
		a.Status = *in.Status
	}
	if in.Tools != nil {
		a.Tools = *in.Tools
	}
	if err := s.store.CreateAgent(ctx, a); err != nil {
		return nil, toolsGone(err)
	}
	return view(a), nil
}

// Get returns the account's agent.
func (s *Service) Get(ctx context.Context, accountID, id int64) (*Agent, error) {
	a, err := s.store.GetAgent(ctx, accountID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return view(a), nil
}

// List returns one page of the account's agents.
func (s *Service) List(ctx context.Context, accountID int64, p store.Page) ([]*Agent, string, error) {
	as, next, err := s.store.ListAgents(ctx, accountID, p)
	if err != nil {
		return nil, "", err
	}
	out := make([]*Agent, len(as))
	for i := range as {
		out[i] = view(&as[i])
	}
	return out, next, nil
}

// Update changes the given fields; Tools replaces the whole list.
func (s *Service) Update(ctx context.Context, accountID, id int64, in Input) (*Agent, error) {
	current, err := s.Get(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if in == (Input{}) {
		return current, nil // nothing to change: nothing written, updated_at kept
	}
	if err := s.Check(ctx, accountID, in, false); err != nil {
		return nil, err
	}
	if unchanged(current, in) {
		return current, nil // the values it has already: nothing written, updated_at kept
	}
	a, err := s.store.UpdateAgent(ctx, accountID, id, store.AgentUpdate{Name: in.Name, Goal: in.Goal, Status: in.Status, Tools: in.Tools})
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, toolsGone(err)
	}
	return view(a), nil
}

// unchanged reports whether every field in gives (checked, so a name is
// trimmed) holds the value a already has.
func unchanged(a *Agent, in Input) bool {
	return (in.Name == nil || *in.Name == a.Name) &&
		(in.Goal == nil || *in.Goal == a.Goal) &&
		(in.Status == nil || Status(*in.Status) == a.Status) &&
		(in.Tools == nil || slices.Equal(*in.Tools, a.Tools))
}

// Delete removes the account's agent.
func (s *Service) Delete(ctx context.Context, accountID, id int64) error {
	err := s.store.DeleteAgent(ctx, accountID, id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	}
	return err
}

// toolsGone answers a tool deleted between the check of the list and the
// write (the foreign key refused it) like any unknown tool ID.
func toolsGone(err error) error {
	if errors.Is(err, store.ErrForeignKey) {
		return problem.Validation("Some agent fields are not valid.", map[string]string{"tools": "a listed tool was deleted meanwhile"})
	}
	return err
}
