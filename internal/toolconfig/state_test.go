package toolconfig

import (
	"testing"

	"github.com/quiverhq/quiver/catalog"
)

func TestTransitionTable(t *testing.T) {
	form := &catalog.Step{ID: "f", Type: catalog.StepForm}
	oauth := &catalog.Step{ID: "o", Type: catalog.StepOAuth}
	var none *catalog.Step
	cases := []struct {
		from State
		ev   Event
		next *catalog.Step
		want State // "" means refused
	}{
		{"", EventCreated, form, AwaitingInput},
		{"", EventCreated, oauth, AwaitingAuthorization},
		{"", EventCreated, none, Configured},
		{Configured, EventCreated, form, ""},
		{AwaitingInput, EventStepAccepted, form, AwaitingInput},
		{AwaitingInput, EventStepAccepted, oauth, AwaitingAuthorization},
		{AwaitingInput, EventStepAccepted, none, Configured},
		{AwaitingAuthorization, EventStepAccepted, none, ""},
		{Configured, EventStepAccepted, none, ""},
		{"", EventStepAccepted, form, ""},
		{AwaitingAuthorization, EventAuthorized, none, Configured},
		{AwaitingAuthorization, EventAuthorized, form, AwaitingInput},
		{AwaitingAuthorization, EventAuthorized, oauth, ""},
		{AwaitingInput, EventAuthorized, none, ""},
		{Configured, EventAuthorized, none, ""},
		{Configured, EventCredentialsRevoked, oauth, AwaitingAuthorization},
		{AwaitingAuthorization, EventCredentialsRevoked, oauth, AwaitingAuthorization},
		{Configured, EventCredentialsRevoked, form, ""},
		{AwaitingInput, EventCredentialsRevoked, oauth, ""},
		{Configured, EventReset, form, AwaitingInput},
		{Configured, EventReset, oauth, AwaitingAuthorization},
		{Configured, EventReset, none, Configured},
		{AwaitingInput, EventReset, form, AwaitingInput},
		{AwaitingAuthorization, EventReset, form, AwaitingInput},
		{"", EventReset, form, ""},
		{AwaitingInput, Event("bogus"), form, ""},
	}
	for _, c := range cases {
		got, err := Transition(c.from, c.ev, c.next)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q --%s--> %v: allowed (to %q), want refused", c.from, c.ev, c.next, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q --%s--> %v = %q, %v; want %q", c.from, c.ev, c.next, got, err, c.want)
		}
	}
}
