package toolconfig

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/catalog"
)

// FuzzValidateStep feeds every catalog entry's form steps arbitrary
// answers. validateStep never panics; what it accepts is what a connector
// can use as given: every value is one line, a secret string has no
// surrounding space, and an object field (request headers) names each
// header once, ignoring case, with values HTTP sends unchanged. A refusal
// names only fields of the step.
func FuzzValidateStep(f *testing.F) {
	cat, err := catalog.Load()
	if err != nil {
		f.Fatal(err)
	}
	var steps []*catalog.Step
	for _, e := range cat.List("") {
		for i := range e.Steps {
			if len(e.Steps[i].Fields) > 0 {
				steps = append(steps, &e.Steps[i])
			}
		}
	}
	for _, s := range []string{
		`{"url":"http://127.0.0.1:1/","headers":{"x-a":"1","X-A":"2"}}`, `{"url":"http://x","headers":{"X-A":" p "}}`,
		`{"url":"http://x","headers":{"":"1"}}`, `{"url":"http://x","headers":{"A":"\u0000"}}`, `{"url":"http://x","headers":[]}`,
		`{"url":" http://x ","bearer_token":" t"}`, `{"TAVILY_API_KEY":"tvly-1"}`, `{"TAVILY_API_KEY":"tvly- "}`,
		`{"base_url":"http://x:0"}`, `{"base_url":"http://x:65535"}`, `{"auth_type":"header","header_name":"X","token":"t"}`,
		`{"auth_type":"bearer"}`, `{"auth_type":null,"token":""}`, `{}`, `{"url":1e400}`, `{"headers":{"a":"` + strings.Repeat("v", 17000) + `"}}`,
	} {
		for i := range steps {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, src string) {
		var answers map[string]json.RawMessage
		if json.Unmarshal([]byte(src), &answers) != nil {
			return
		}
		step := steps[int(which)%len(steps)]
		values, bad := validateStep(step, answers)
		for name := range bad {
			if _, ok := step.Field(name); !ok {
				t.Fatalf("%s: refusal names %q, no field of step %s", src, name, step.ID)
			}
		}
		if len(bad) > 0 {
			return
		}
		for name, v := range values {
			fd, _ := step.Field(name)
			switch v := v.(type) {
			case string:
				if hasControl(v) {
					t.Fatalf("%s: %s accepted with a control character: %q", src, name, v)
				}
				if fd.Secret && v != strings.TrimSpace(v) {
					t.Fatalf("%s: secret %s accepted with surrounding space: %q", src, name, v)
				}
			case map[string]string:
				seen := map[string]bool{}
				for k, hv := range v {
					if seen[strings.ToLower(k)] {
						t.Fatalf("%s: %s accepted naming %q twice, ignoring case", src, name, k)
					}
					seen[strings.ToLower(k)] = true
					if hasControl(hv) || hv != strings.TrimSpace(hv) {
						t.Fatalf("%s: %s accepted with value %q for %q, which HTTP would not send as given", src, name, hv, k)
					}
				}
			}
		}
	})
}
