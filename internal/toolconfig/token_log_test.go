package toolconfig

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestTokenNeverLogged: a Token that reaches a log line by mistake shows
// none of its values, through the JSON handler the server logs with as
// through the text one and fmt. Its LogValue returned any, which is not
// slog.LogValuer's method, so the JSON handler marshalled the token whole,
// access and refresh tokens and all.
func TestTokenNeverLogged(t *testing.T) {
	tok := &Token{AccessToken: "at-SECRET", RefreshToken: "rt-SECRET", TokenType: "Bearer", Expiry: time.Now()}
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&buf, nil), slog.NewTextHandler(&buf, nil)} {
		l := slog.New(h)
		l.Info("refresh", "token", tok)
		l.Info("refresh", slog.Any("token", tok))
		l.With("token", tok).Info("refresh")
		l.Info("refresh", slog.Group("g", "token", tok))
	}
	fmt.Fprintf(&buf, "%v %+v %s", tok, tok, tok)
	if strings.Contains(buf.String(), "SECRET") {
		t.Fatalf("a logged token shows its values:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "redacted") {
		t.Fatalf("a logged token does not say it is redacted:\n%s", buf.String())
	}
}
