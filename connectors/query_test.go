package connectors

import "testing"

func TestEscapeQuery(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"a=1&b=2":            "a=1&b=2",
		"q=hello world":      "q=hello%20world",
		"q=é":                "q=%C3%A9",
		"q=%C3%A9&r=%zz&s=%": "q=%C3%A9&r=%25zz&s=%25",
		"t=%4":               "t=%254",
		`q="<>{}|\^` + "`":   "q=%22%3C%3E%7B%7D%7C%5C%5E%60",
		"x=!$&'()*+,;=:@/?~": "x=!$&'()*+,;=:@/?~",
		"#=\x00":             "%23=%00",
	} {
		if got := EscapeQuery(in); got != want {
			t.Errorf("EscapeQuery(%q) = %q, want %q", in, got, want)
		}
	}
}
