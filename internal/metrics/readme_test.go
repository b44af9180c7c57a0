package metrics

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// descs returns the variable labels of every metric m holds, by name.
func descs(t *testing.T, m *Metrics) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		c, ok := v.Field(i).Interface().(prometheus.Collector)
		if !ok || v.Type().Field(i).Name == "Registry" {
			continue
		}
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			// Desc has no accessors; its String is stable:
			// Desc{fqName: "x", …, variableLabels: {a,b}}.
			s := d.String()
			name := regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(s)
			labels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`).FindStringSubmatch(s)
			if name == nil || labels == nil {
				t.Fatalf("cannot read %s", s)
			}
			out[name[1]] = nil
			if labels[1] != "" {
				out[name[1]] = strings.Split(labels[1], ",")
			}
		}
	}
	return out
}

// TestREADMENamesEveryMetric: the README's Observability section is what
// operators build dashboards and alerts from. Every quiver_ metric it
// names exists, with each label it names; every quiver_ metric Quiver
// exports is named there.
func TestREADMENamesEveryMetric(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	exported := descs(t, New())
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(quiver_[a-z_]+)(\{([^}]*)\})?`).FindAllStringSubmatch(string(readme), -1) {
		name := m[1]
		documented[name] = true
		labels, ok := exported[name]
		if !ok {
			t.Errorf("README names %s, which Quiver does not export", m[0])
			continue
		}
		if m[3] == "" {
			continue
		}
		// {a} or {a="x"|"y"}, or several: {a,b}.
		for _, l := range strings.Split(m[3], ",") {
			label, _, _ := strings.Cut(strings.TrimSpace(l), "=")
			if !slices.Contains(labels, label) {
				t.Errorf("README names %s with label %q; its labels are %v", name, label, labels)
			}
		}
	}
	for name := range exported {
		if !documented[name] {
			t.Errorf("Quiver exports %s, which the README does not name", name)
		}
	}
}
