// Package toolconfig owns a connected tool's configuration: the state
// machine that walks a tool through its catalog entry's steps, validation of
// each step's answers, sealing secrets before they are stored, masking them
// on every read, and resolving a configured tool for the call engine. It
// never speaks HTTP and never writes SQL.
//
// A tool's state, and the events that move it (Transition is the one
// function that decides):
//
//	stateDiagram-v2
//	    [*] --> awaiting_input: created (first step is a form)
//	    [*] --> awaiting_authorization: created (first step is oauth)
//	    [*] --> configured: created (no steps)
//	    awaiting_input --> awaiting_input: step_accepted (next step is a form)
//	    awaiting_input --> awaiting_authorization: step_accepted (next step is oauth)
//	    awaiting_input --> configured: step_accepted (last step)
//	    awaiting_authorization --> awaiting_input: authorized (next step is a form)
//	    awaiting_authorization --> configured: authorized (last step)
//	    configured --> awaiting_authorization: credentials_revoked
//	    awaiting_input --> awaiting_input: reset
//	    awaiting_authorization --> awaiting_input: reset
//	    configured --> awaiting_input: reset
//
// (reset lands on whichever state the first step calls for.) A refused
// answer leaves the tool where it was. Every write of a new state is a
// conditional update on the state and version that were read.
package toolconfig

import (
	"fmt"

	"github.com/quiverhq/quiver/catalog"
)

// State is where a connected tool is in its configuration.
type State string

// The states of a connected tool.
const (
	AwaitingInput         State = "awaiting_input"         // at a form step
	AwaitingAuthorization State = "awaiting_authorization" // at an oauth step
	Configured            State = "configured"             // every step done
)

// Event moves a tool between states.
type Event string

// The events of the configuration state machine.
const (
	EventCreated            Event = "created"             // the tool was just connected
	EventStepAccepted       Event = "step_accepted"       // a form step's answer was valid
	EventAuthorized         Event = "authorized"          // an oauth step's exchange succeeded
	EventCredentialsRevoked Event = "credentials_revoked" // the provider refused our tokens for good
	EventReset              Event = "reset"               // the user started over
)

// stateAt is the state of a tool waiting at step next (nil: none left).
func stateAt(next *catalog.Step) State {
	switch {
	case next == nil:
		return Configured
	case next.Type == catalog.StepOAuth:
		return AwaitingAuthorization
	default:
		return AwaitingInput
	}
}

// Transition returns the state after ev, for a tool in state from that then
// waits at step next (nil when no step is left). It refuses moves the
// machine does not allow.
func Transition(from State, ev Event, next *catalog.Step) (State, error) {
	to := stateAt(next)
	ok := false
	switch ev {
	case EventCreated:
		ok = from == ""
	case EventStepAccepted:
		ok = from == AwaitingInput
	case EventAuthorized:
		ok = from == AwaitingAuthorization && to != AwaitingAuthorization
	case EventCredentialsRevoked:
		ok = (from == Configured || from == AwaitingAuthorization) && to == AwaitingAuthorization
	case EventReset:
		ok = from == AwaitingInput || from == AwaitingAuthorization || from == Configured
	}
	if !ok {
		return from, fmt.Errorf("toolconfig: %s is not allowed from state %q to %q", ev, from, to)
	}
	return to, nil
}
