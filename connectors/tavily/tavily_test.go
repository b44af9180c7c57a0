package tavily_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/connectors/tavily"
)

const key = "tvly-test-123"

func tool(t *testing.T) *connectors.Tool {
	t.Helper()
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := c.Get("tavily")
	return &connectors.Tool{ID: 1, Entry: e, Config: map[string]string{tavily.ConfigKey: key}}
}

func TestSearchPassesArgumentsAndKey(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/search" {
			t.Errorf("got %s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization = %q", got)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		body, _ := io.ReadAll(r.Body)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(body, &got); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		if string(got["query"]) != `"latest AI research"` || string(got["max_results"]) != "3" ||
			string(got["search_depth"]) != `"advanced"` || string(got["topic"]) != `"news"` {
			t.Errorf("body = %s", body)
		}
		if _, ok := got["api_key"]; ok {
			t.Errorf("undocumented argument passed through: %s", body)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"query":"latest AI research","results":[{"title":"A","url":"https://a.example"}]}`)
	}))
	t.Cleanup(srv.Close)

	c := tavily.New(tavily.Options{BaseURL: srv.URL + "/"})
	res, err := c.Call(context.Background(), tool(t), "search",
		json.RawMessage(`{"query":"latest AI research","max_results":3,"search_depth":"advanced","topic":"news","api_key":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(string(res.Content), `"results"`) {
		t.Errorf("result = %+v %s", res.IsError, res.Content)
	}
}

func TestExtract(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/extract" || string(body) != `{"urls":["https://a.example"]}` {
			t.Errorf("got %s %s", r.URL.Path, body)
		}
		io.WriteString(w, `{"results":[{"url":"https://a.example","raw_content":"hi"}],"failed_results":[]}`)
	}))
	t.Cleanup(srv.Close)
	res, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tool(t), "extract", json.RawMessage(`{"urls":["https://a.example"]}`))
	if err != nil || res.IsError {
		t.Fatalf("res=%+v err=%v", res, err)
	}
}

func TestStatusMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status  int
		body    string
		kind    connectors.Kind // "" means a Result
		isError bool
		msg     string
	}{
		{401, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`, connectors.KindUpstreamAuth, false, "invalid API key"},
		{403, `{"detail":{"error":"Forbidden"}}`, connectors.KindUpstreamAuth, false, "Forbidden"},
		{400, `{"detail":{"error":"Query is missing."}}`, connectors.KindRejected, false, "Query is missing."},
		{422, `{"detail":"max_results must be <= 20"}`, connectors.KindRejected, false, "max_results must be"},
		{429, `{"detail":{"error":"slow down"}}`, connectors.KindUpstreamLimited, false, "rate limited"},
		{432, `{"detail":{"error":"This request exceeds your plan's set usage limit."}}`, connectors.KindUpstreamLimited, false, "plan's set usage limit"},
		{433, `{"detail":{"error":"This request exceeds the pay-as-you-go limit."}}`, connectors.KindUpstreamLimited, false, "pay-as-you-go limit"},
		// No such endpoint: the base URL is wrong, not the arguments.
		{404, `{"detail":"Not Found"}`, connectors.KindUpstreamRefused, false, "no POST /search at its base URL (404)"},
		{405, `{"detail":"Method Not Allowed"}`, connectors.KindUpstreamRefused, false, "QUIVER_TAVILY_BASE_URL"},
		{500, `{"detail":{"error":"boom"}}`, "", true, ""},
		{502, `bad gateway`, "", true, ""},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			res, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tool(t), "search", json.RawMessage(`{"query":"q"}`))
			if tc.kind != "" {
				if got := connectortest.Kind(t, err); got != tc.kind {
					t.Fatalf("kind = %s, want %s", got, tc.kind)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %q does not carry %q", err, tc.msg)
				}
				if strings.Contains(err.Error(), key) {
					t.Errorf("error leaks the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.isError || !json.Valid(res.Content) {
				t.Errorf("result = %t %s", res.IsError, res.Content)
			}
		})
	}
}

func TestUnknownActionAndMissingKey(t *testing.T) {
	t.Parallel()
	c := tavily.New(tavily.Options{BaseURL: "http://127.0.0.1:1"})
	if _, err := c.Call(context.Background(), tool(t), "crawl", nil); connectortest.Kind(t, err) != connectors.KindUnknownAction {
		t.Errorf("unknown action: %v", err)
	}
	tl := tool(t)
	tl.Config = map[string]string{}
	if _, err := c.Call(context.Background(), tl, "search", json.RawMessage(`{"query":"q"}`)); connectortest.Kind(t, err) != connectors.KindUpstreamAuth {
		t.Errorf("missing key: %v", err)
	}
}

func TestActionsFromCatalog(t *testing.T) {
	t.Parallel()
	acts, err := tavily.New(tavily.Options{}).Actions(context.Background(), tool(t))
	if err != nil || len(acts) != 2 || acts[0].Name != "search" || !acts[0].Retryable || len(acts[0].InputSchema) == 0 {
		t.Fatalf("actions = %+v, %v", acts, err)
	}
}

func TestTransportFailures(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		_, err := tavily.New(tavily.Options{BaseURL: "http://" + connectortest.ClosedAddr(t)}).Call(context.Background(), tool(t), "search", json.RawMessage(`{"query":"q"}`))
		if got := connectortest.Kind(t, err); got != connectors.KindUnreachable {
			t.Errorf("kind = %s (%v)", got, err)
		}
	})
	t.Run("hangs past deadline", func(t *testing.T) {
		t.Parallel()
		srv := connectortest.HangingServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), connectortest.HangDeadline)
		defer cancel()
		_, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(ctx, tool(t), "search", json.RawMessage(`{"query":"q"}`))
		if got := connectortest.Kind(t, err); got != connectors.KindOutcomeUnknown {
			t.Errorf("kind = %s (%v)", got, err)
		}
	})
	// The client does not follow redirects (the base URL is dialled
	// without the egress guard, and where a redirect points is not the
	// operator's choice): a redirect is Tavily's answer, a refusal naming
	// QUIVER_TAVILY_BASE_URL, and its target is never dialled.
	// TestProbeEgressTavilyRedirect, in internal/e2e, shows it over the API.
	t.Run("redirected", func(t *testing.T) {
		t.Parallel()
		closed := "http://" + connectortest.ClosedAddr(t) + "/search"
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, closed, http.StatusTemporaryRedirect)
		}))
		t.Cleanup(srv.Close)
		_, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tool(t), "search", json.RawMessage(`{"query":"q"}`))
		if got := connectortest.Kind(t, err); got != connectors.KindUpstreamRefused || !strings.Contains(err.Error(), "QUIVER_TAVILY_BASE_URL") {
			t.Errorf("kind = %s (%v), want upstream_refused naming QUIVER_TAVILY_BASE_URL", got, err)
		}
	})
	t.Run("closed mid-response", func(t *testing.T) {
		t.Parallel()
		srv := connectortest.CutServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"results\":[")
		_, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tool(t), "search", json.RawMessage(`{"query":"q"}`))
		if got := connectortest.Kind(t, err); got != connectors.KindOutcomeUnknown {
			t.Errorf("kind = %s (%v)", got, err)
		}
	})
}

// An API key that no header can carry (a line break or a control
// character, stored before such keys were refused) makes the call a
// rejection, not an unknown outcome: nothing was sent, so the caller's key
// is released. Tavily sees no request.
func TestUnsendableKey(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"tvly-a\r\nX-Injected: 1", "tvly-a\n", "tvly-\x01"} {
		var requests atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			io.WriteString(w, `{"results":[]}`)
		}))
		t.Cleanup(srv.Close)
		tl := tool(t)
		tl.Config[tavily.ConfigKey] = bad
		_, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tl, "search", json.RawMessage(`{"query":"q"}`))
		if got := connectortest.Kind(t, err); got != connectors.KindRejected {
			t.Errorf("key %q: kind = %s (%v)", bad, got, err)
		}
		if strings.Contains(err.Error(), bad) {
			t.Errorf("the error shows the key: %v", err)
		}
		if n := requests.Load(); n != 0 {
			t.Errorf("key %q: Tavily got %d requests", bad, n)
		}
	}
}

// TestUsageLimits: Tavily's 429 is a pre-effect refusal carrying its
// Retry-After (seconds or an HTTP date; 1s when it gives none we can use),
// and its plan and pay-as-you-go limits (432, 433) carry no delay at all:
// retrying soon will not help.
func TestUsageLimits(t *testing.T) {
	t.Parallel()
	in30s := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		name       string
		status     int
		retryAfter string
		min, max   time.Duration
		msg        string
	}{
		{"429 seconds", 429, "7", 7 * time.Second, 7 * time.Second, "Tavily rate limited the request (429)"},
		{"429 date", 429, in30s, 28 * time.Second, 30 * time.Second, "Tavily rate limited the request (429)"},
		{"429 past date", 429, "Mon, 02 Jan 2006 15:04:05 GMT", time.Second, time.Second, "rate limited"},
		{"429 none", 429, "", time.Second, time.Second, "rate limited"},
		{"429 garbage", 429, "soon", time.Second, time.Second, "rate limited"},
		{"429 negative", 429, "-3", time.Second, time.Second, "rate limited"},
		{"432 plan", 432, "60", 0, 0, "Tavily plan's usage limit was reached (432)"},
		{"433 pay-as-you-go", 433, "", 0, 0, "Tavily pay-as-you-go limit was reached (433)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, `{"detail":{"error":"quota says no"}}`)
			}))
			t.Cleanup(srv.Close)
			_, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tool(t), "search", json.RawMessage(`{"query":"q"}`))
			var ce *connectors.Error
			if !errors.As(err, &ce) || ce.Kind != connectors.KindUpstreamLimited {
				t.Fatalf("err = %v, want %s", err, connectors.KindUpstreamLimited)
			}
			if ce.RetryAfter < tc.min || ce.RetryAfter > tc.max {
				t.Errorf("RetryAfter = %s, want %s..%s", ce.RetryAfter, tc.min, tc.max)
			}
			if !strings.Contains(ce.Message, tc.msg) || !strings.Contains(ce.Message, "quota says no") {
				t.Errorf("message %q does not carry %q and Tavily's text", ce.Message, tc.msg)
			}
		})
	}
}

// TestResultTooLarge: an answer over the limit is an error result, shaped as
// the other connectors shape it: the search ran, and this is its outcome.
func TestResultTooLarge(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"results":[{"content":"`+strings.Repeat("x", 9<<20)+`"}]}`)
	}))
	t.Cleanup(srv.Close)
	res, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tool(t), "search", json.RawMessage(`{"query":"q"}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(res.Content, &body); err != nil {
		t.Fatalf("content %.200s: %v", res.Content, err)
	}
	if !res.IsError || body.Error != "result_too_large" || !strings.Contains(body.Message, "larger than 8388608 bytes") {
		t.Errorf("result = %t %s", res.IsError, res.Content)
	}
}

// TestLongErrorTextCut: a refusal's text is cut to 300 characters, not 300
// bytes, so a message never ends in half a character.
func TestLongErrorTextCut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "x"+strings.Repeat("é", 400))
	}))
	t.Cleanup(srv.Close)
	_, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tool(t), "search", json.RawMessage(`{"query":"q"}`))
	if err == nil || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "x"+strings.Repeat("é", 299)+"…") {
		t.Fatalf("error %q: want the text cut whole at 300 characters", err)
	}
}

// TestNonJSONAnswerHidesKey: a 2xx whose body is not JSON (a proxy's or
// a wrong base URL's page, which may quote the request it was sent) is a
// tool error result carrying that body with the API key masked, as in
// every other answer that quotes Tavily's words.
func TestNonJSONAnswerHidesKey(t *testing.T) {
	t.Parallel()
	for _, status := range []int{200, 203} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			io.WriteString(w, "<p>you sent "+r.Header.Get("Authorization")+"</p>")
		}))
		res, err := tavily.New(tavily.Options{BaseURL: srv.URL}).Call(context.Background(), tool(t), "search", json.RawMessage(`{"query":"q"}`))
		srv.Close()
		if err != nil {
			t.Fatalf("%d: %v", status, err)
		}
		if !res.IsError || !strings.Contains(string(res.Content), "you sent Bearer ****") || strings.Contains(string(res.Content), key[5:]) {
			t.Errorf("%d: result = %t %s, want an error result with the key masked", status, res.IsError, res.Content)
		}
	}
}
