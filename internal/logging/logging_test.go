package logging

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// A library's routine lines go to debug; its warnings and errors stay.
func TestChatter(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(Chatter(New(&buf, "info").Handler()))
	l.Info("server session connected")
	l.Warn("calling tools/list: boom")
	l.With("a", 1).Error("failed to connect")
	out := buf.String()
	if strings.Contains(out, "session connected") || !strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, `"level":"ERROR"`) {
		t.Fatalf("at info:\n%s", out)
	}
	buf.Reset()
	d := slog.New(Chatter(New(&buf, "debug").Handler()))
	d.InfoContext(WithRequestID(context.Background(), "r1"), "server connecting")
	if out := buf.String(); !strings.Contains(out, `"level":"DEBUG"`) || !strings.Contains(out, `"request_id":"r1"`) {
		t.Fatalf("at debug: %s", out)
	}
}
