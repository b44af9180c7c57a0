package agents

import "testing"

func TestBlank(t *testing.T) {
	blank := []string{"", " ", "\t", "\u00a0", "\u3000", "\u200b", "\ufeff", "\u2066", "\U000e0001",
		"\u034f",           // combining grapheme joiner
		"\u115f", "\u1160", // Hangul choseong and jungseong fillers
		"\u3164", "\uffa0", // Hangul filler, halfwidth Hangul filler
		"\u17b4", "\u17b5", // Khmer inherent vowels
		"\u180b", "\ufe0f", "\U000e0100", // variation selectors
		"\u2800",        // Braille pattern blank
		"\u3164\u200b ", // a mix
	}
	for _, s := range blank {
		if !Blank(s) {
			t.Errorf("Blank(%+q) = false, want true: it shows nothing", s)
		}
	}
	shown := []string{"a", "\u00e9", "e\u0301", "\u0301", "\u2801", "\uac00", "a\u3164", "\U0001f600", "\u2764\ufe0f", "_"}
	for _, s := range shown {
		if Blank(s) {
			t.Errorf("Blank(%+q) = true, want false: it shows something", s)
		}
	}
}
