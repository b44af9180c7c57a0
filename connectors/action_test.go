package connectors

import (
	"encoding/json"
	"testing"

	"github.com/quiverhq/quiver/catalog"
)

// TestActionEqual: two actions are equal when every field says the same;
// a hint left out is not a hint given as false.
func TestActionEqual(t *testing.T) {
	yes, no := true, false
	base := func() Action {
		return Action{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Retryable: true,
			Annotations: &catalog.Annotations{Title: "A", ReadOnlyHint: &yes}, OutputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	if a, b := base(), base(); !a.Equal(b) {
		t.Fatal("two copies of one action differ")
	}
	for name, change := range map[string]func(*Action){
		"name":           func(a *Action) { a.Name = "b" },
		"description":    func(a *Action) { a.Description = "" },
		"input schema":   func(a *Action) { a.InputSchema = json.RawMessage(`{}`) },
		"retryable":      func(a *Action) { a.Retryable = false },
		"output schema":  func(a *Action) { a.OutputSchema = nil },
		"no annotations": func(a *Action) { a.Annotations = nil },
		"title":          func(a *Action) { a.Annotations.Title = "" },
		"hint false":     func(a *Action) { a.Annotations.ReadOnlyHint = &no },
		"hint left out":  func(a *Action) { a.Annotations.ReadOnlyHint = nil },
		"another hint":   func(a *Action) { a.Annotations.IdempotentHint = &yes },
	} {
		a, b := base(), base()
		change(&b)
		if a.Equal(b) || b.Equal(a) {
			t.Errorf("%s: the actions compare equal", name)
		}
	}
}
