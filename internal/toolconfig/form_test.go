package toolconfig

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/catalog"
)

func httpRequestSteps(t *testing.T) []catalog.Step {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, ok := cat.Get("http-request")
	if !ok {
		t.Fatal("no http-request entry")
	}
	return e.Steps
}

func answers(t *testing.T, src string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestValidateStepConditions covers the required_when rules of the
// http-request auth step: each answer is accepted with exactly these values,
// or refused naming exactly these fields.
func TestValidateStepConditions(t *testing.T) {
	auth := &httpRequestSteps(t)[1]
	for _, tc := range []struct {
		answer string
		values map[string]any
		bad    []string
	}{
		{`{}`, map[string]any{"auth_type": "none"}, nil},
		{`{"auth_type":"none","token":"","header_name":" "}`, map[string]any{"auth_type": "none"}, nil},
		{`{"auth_type":"bearer","token":"t"}`, map[string]any{"auth_type": "bearer", "token": "t"}, nil},
		{`{"auth_type":"header","token":"t","header_name":"X-Key"}`, map[string]any{"auth_type": "header", "token": "t", "header_name": "X-Key"}, nil},
		{`{"auth_type":"bearer"}`, nil, []string{"token"}},
		{`{"auth_type":"bearer","token":null}`, nil, []string{"token"}},
		{`{"auth_type":"header"}`, nil, []string{"header_name", "token"}},
		{`{"auth_type":"header","token":"t"}`, nil, []string{"header_name"}},
		{`{"auth_type":"header","token":"t","header_name":"a b"}`, nil, []string{"header_name"}},
		{`{"auth_type":"none","token":"t"}`, nil, []string{"token"}},
		{`{"token":"t"}`, nil, []string{"token"}},
		{`{"auth_type":"bearer","token":"t","header_name":"X-Key"}`, nil, []string{"header_name"}},
		// An unusable auth_type is its own error; what depends on it is not judged.
		{`{"auth_type":"basic","token":"t"}`, nil, []string{"auth_type"}},
	} {
		values, bad := validateStep(auth, answers(t, tc.answer))
		if got := slices.Sorted(maps.Keys(bad)); !slices.Equal(got, tc.bad) {
			t.Errorf("%s: bad %v, want fields %v", tc.answer, bad, tc.bad)
			continue
		}
		if tc.bad == nil && !maps.EqualFunc(values, tc.values, func(a, b any) bool { return a == b }) {
			t.Errorf("%s: values %v, want %v", tc.answer, values, tc.values)
		}
	}
	_, bad := validateStep(auth, answers(t, `{"auth_type":"none","token":"t"}`))
	if !strings.Contains(bad["token"], "auth_type is bearer or header") {
		t.Errorf("token message %q does not name its condition", bad["token"])
	}
}

// TestAnsweredElsewhere: an answer naming an earlier step's field is stale;
// the current step's fields and names no earlier step has are not its
// concern.
func TestAnsweredElsewhere(t *testing.T) {
	steps := httpRequestSteps(t)
	if bad := answeredElsewhere(steps, 0, answers(t, `{"base_url":"x","auth_type":"none","other":1}`)); len(bad) != 0 {
		t.Errorf("at step 1: %v", bad)
	}
	bad := answeredElsewhere(steps, 1, answers(t, `{"base_url":"x","auth_type":"none","other":1}`))
	if len(bad) != 1 || !strings.Contains(bad["base_url"], "step 2 (auth)") || !strings.Contains(bad["base_url"], "step 2 of 2") {
		t.Errorf("at step 2: %v", bad)
	}
}

func TestSealedAndMasked(t *testing.T) {
	url := &catalog.Field{Name: "url", Type: catalog.FieldURL}
	secret := &catalog.Field{Name: "token", Type: catalog.FieldString, Secret: true, Pattern: "^tvly-"}
	plain := &catalog.Field{Name: "label", Type: catalog.FieldString}
	for _, tc := range []struct {
		f      *catalog.Field
		v      any
		sealed bool
		shown  any
	}{
		{url, "https://x.test/mcp", false, "https://x.test/mcp"},
		{url, "https://x.test/mcp?key=abc", true, "https://x.test/mcp?key=****"},
		{url, "https://x.test/api/mcp/s/Zk3q9v0aTr51xW8yQe/mcp", true, "https://x.test/api/mcp/s/****/mcp"},
		{url, "https://user:pw@x.test/mcp", true, "https://****@x.test/mcp"},
		{url, "https://x.test/mcp?", false, "https://x.test/mcp?"},
		{secret, "tvly-abc", true, "tvly-****"},
		{plain, "a?b=c", false, "a?b=c"},
	} {
		if got := sealed(tc.f, tc.v); got != tc.sealed {
			t.Errorf("sealed(%s, %v) = %v", tc.f.Name, tc.v, got)
		}
		if got := mask(tc.f, tc.v); got != tc.shown {
			t.Errorf("mask(%s, %v) = %v, want %v", tc.f.Name, tc.v, got, tc.shown)
		}
	}
}

// A URL an older build stored plain, with a key in its path, is sealed the
// next time any step writes the configuration.
func TestReseal(t *testing.T) {
	steps := []catalog.Step{
		{ID: "base", Fields: []catalog.Field{{Name: "base_url", Type: catalog.FieldURL}}},
		{ID: "auth", Fields: []catalog.Field{{Name: "auth_type", Type: catalog.FieldEnum, Options: []string{"none"}}}},
	}
	keyed := "https://api.example.com/s/Zk3q9v0aTr51xW8yQe/v1"
	plain := map[string]any{"base_url": keyed, "auth_type": "none", "other": "x"}
	secret := map[string]any{}
	reseal(steps, plain, secret)
	if _, ok := plain["base_url"]; ok || secret["base_url"] != keyed {
		t.Errorf("plain %v, secret %v: the keyed URL is not sealed", plain, secret)
	}
	if plain["auth_type"] != "none" || plain["other"] != "x" {
		t.Errorf("plain %v: what needs no sealing moved", plain)
	}
	plain, secret = map[string]any{"base_url": "https://api.example.com/v1"}, map[string]any{}
	if reseal(steps, plain, secret); len(secret) != 0 {
		t.Errorf("a URL with nothing to hide was sealed: %v", secret)
	}
}
