package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUsageBeforeConfiguration: a command line quiver cannot run is its
// usage error, whatever the environment says, as help already is: in an
// environment with a bad variable, `quiver mirgate up` said only that the
// variable was bad, and an unknown command never said which it was.
func TestUsageBeforeConfiguration(t *testing.T) {
	t.Setenv("QUIVER_CALL_TIMEOUT", "soon")
	t.Setenv("QUIVER_DATA_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mirgate", "up"}, `unknown command "mirgate"`},
		{[]string{"serve", "extra"}, "serve takes no arguments"},
		{[]string{"migrate"}, "usage: quiver migrate up|down|status"},
		{[]string{"migrate", "sideways"}, "usage: quiver migrate up|down|status"},
		{[]string{"migrate", "up", "now"}, "usage: quiver migrate up|down|status"},
		{[]string{"keys"}, "usage: quiver keys create"},
		{[]string{"keys", "list"}, "usage: quiver keys create"},
		{[]string{"keys", "revoke"}, "usage: quiver keys create"},
		{[]string{"keys", "revoke", "a", "b"}, "usage: quiver keys create"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "QUIVER_CALL_TIMEOUT") {
			t.Errorf("%v: err = %v, want the usage error %q alone", tc.args, err, tc.want)
		}
	}
	// A command line that is right goes on to the configuration, and is
	// refused there.
	if err := run(context.Background(), []string{"migrate", "status"}, new(bytes.Buffer), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "QUIVER_CALL_TIMEOUT") {
		t.Errorf("migrate status: err = %v, want the configuration's", err)
	}
}
