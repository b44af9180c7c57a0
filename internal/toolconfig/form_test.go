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
		{`{"auth_type":"bearer","token":"t "}`, nil, []string{"token"}}, // a secret copied with a space
		{`{"auth_type":"bearer","token":" t"}`, nil, []string{"token"}},
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

// TestStrayAnswers: every answer that is not a field of the current step
// is named, saying whether it belongs to an earlier step, a later one or
// none (with the field it most likely misspells).
// TestStrayAnswerLongName: a long name is not guessed at (an edit distance
// per byte of it cost a megabyte's square).
func TestStrayAnswerLongName(t *testing.T) {
	name := strings.Repeat("a", 63) + "é" + strings.Repeat("b", 1<<20)
	bad := strayAnswers(httpRequestSteps(t), 1, map[string]json.RawMessage{name: json.RawMessage("1")})
	if len(bad) != 0 { // near no field: an unknown field, ignored
		t.Fatalf("bad = %.200v", bad)
	}
}

func TestStrayAnswers(t *testing.T) {
	steps := httpRequestSteps(t)
	for _, tc := range []struct {
		at     int
		answer string
		want   map[string]string // name → a phrase of its message
	}{
		{0, `{"base_url":"x"}`, nil},
		{0, `{"base_url":"x","auth_type":"none","token":null}`, map[string]string{
			"auth_type": "of step 2 (auth), which comes later", "token": "this tool is at step 1 of 2"}},
		{0, `{"baseUrl":"x"}`, map[string]string{"baseUrl": `did you mean "base_url"?`}},
		{1, `{"base_url":"x","auth_type":"none"}`, map[string]string{
			"base_url": "of step 1 (base_url), which is already answered; this tool is at step 2 of 2"}},
		{1, `{"authType":"bearer","Token":"s3cret","tokn":"","other":1}`, map[string]string{
			"authType": `did you mean "auth_type"?`, "Token": `did you mean "token"?`, "tokn": `did you mean "token"?`}},
		// No single nearest field: an unknown field, ignored.
		{1, `{"x":1}`, nil},
	} {
		bad := strayAnswers(steps, tc.at, answers(t, tc.answer))
		if got, want := slices.Sorted(maps.Keys(bad)), slices.Sorted(maps.Keys(tc.want)); !slices.Equal(got, want) {
			t.Errorf("step %d, %s: bad %v, want fields %v", tc.at+1, tc.answer, bad, want)
			continue
		}
		for name, phrase := range tc.want {
			if !strings.Contains(bad[name], phrase) {
				t.Errorf("step %d, %s: %s: %q does not say %q", tc.at+1, tc.answer, name, bad[name], phrase)
			}
			if strings.Contains(bad[name], "did you mean") && strings.Contains(phrase, "whose fields") {
				t.Errorf("step %d, %s: %s: %q guesses", tc.at+1, tc.answer, name, bad[name])
			}
		}
	}
	oauthOnly := []catalog.Step{{ID: "oauth", Type: catalog.StepOAuth}}
	if bad := strayAnswers(oauthOnly, 0, answers(t, `{"code":"x"}`)); len(bad) != 0 { // Provide refuses answers there first
		t.Errorf("a step without fields: %v", bad)
	}
}

func TestLikelyField(t *testing.T) {
	names := []string{"url", "bearer_token", "headers"}
	for in, want := range map[string]string{"URL": "url", "bearerToken": "bearer_token", "bearer-token": "bearer_token",
		"header": "headers", "bearer_tokn": "bearer_token", "uri": "url", "token": "", "x": "", "headers_extra": ""} {
		got, ok := likelyField(names, in)
		if ok != (want != "") || got != want && ok {
			t.Errorf("likelyField(%q) = %q, %v; want %q", in, got, ok, want)
		}
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
