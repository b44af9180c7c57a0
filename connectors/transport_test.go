package connectors_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
)

// watched is a test server that counts the connections it accepted and the
// requests its handler got.
type watched struct {
	*httptest.Server
	conns, requests atomic.Int64
}

func watch(t *testing.T, tls bool, h http.HandlerFunc) *watched {
	t.Helper()
	w := &watched{}
	w.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.requests.Add(1)
		h(rw, r)
	}))
	w.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.conns.Add(1)
		}
	}
	w.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	w.EnableHTTP2 = true
	if tls {
		w.StartTLS()
	} else {
		w.Start()
	}
	t.Cleanup(w.Close)
	return w
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func post(t *testing.T, ctx context.Context, url string, header http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return req
}

func client() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// What net/http refuses before it looks for a connection was not sent: the
// request is unusable, a rejection that releases the caller's key. The
// server sees not even a connection.
func TestSendRefusedByTransport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		url    func(srv string) string
		header http.Header
	}{
		{"header value with CRLF", nil, http.Header{"Authorization": {"Bearer a\r\nb"}}},
		{"header value with control character", nil, http.Header{"X-Api-Key": {"a\x01b"}}},
		{"header name with space", nil, http.Header{"X Api Key": {"k"}}},
		{"other scheme", func(srv string) string { return strings.Replace(srv, "http://", "ftp://", 1) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := watch(t, false, ok)
			url := srv.URL
			if tc.url != nil {
				url = tc.url(url)
			}
			resp, err := connectors.Send(client(), post(t, context.Background(), url, tc.header))
			if resp != nil {
				resp.Body.Close()
			}
			if k := connectortest.Kind(t, err); k != connectors.KindRejected {
				t.Errorf("kind = %s, want %s (%v)", k, connectors.KindRejected, err)
			}
			if strings.Contains(err.Error(), "a\r\nb") || strings.Contains(err.Error(), "a\x01b") {
				t.Errorf("the error shows the header's value: %v", err)
			}
			if n := srv.conns.Load(); n != 0 {
				t.Errorf("the server accepted %d connections", n)
			}
		})
	}
}

// A failure to get a connection sent nothing either: the tool is
// unreachable.
func TestSendNoConnection(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		_, err := connectors.Send(client(), post(t, context.Background(), "http://"+connectortest.ClosedAddr(t)+"/", nil))
		if k := connectortest.Kind(t, err); k != connectors.KindUnreachable {
			t.Errorf("kind = %s (%v)", k, err)
		}
	})
	t.Run("certificate not trusted", func(t *testing.T) {
		t.Parallel()
		srv := watch(t, true, ok)
		_, err := connectors.Send(client(), post(t, context.Background(), srv.URL, nil))
		if k := connectortest.Kind(t, err); k != connectors.KindUnreachable {
			t.Errorf("kind = %s (%v)", k, err)
		}
		if n := srv.requests.Load(); n != 0 {
			t.Errorf("the server got %d requests", n)
		}
	})
	t.Run("deadline already passed", func(t *testing.T) {
		t.Parallel()
		srv := watch(t, false, ok)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := connectors.Send(client(), post(t, ctx, srv.URL, nil))
		if k := connectortest.Kind(t, err); k != connectors.KindUnreachable {
			t.Errorf("kind = %s (%v)", k, err)
		}
		if n := srv.conns.Load(); n != 0 {
			t.Errorf("the server accepted %d connections", n)
		}
	})
}

// Once a connection was handed to the request, the tool may have run.
func TestSendMaybeSent(t *testing.T) {
	t.Parallel()
	t.Run("closed after reading the request", func(t *testing.T) {
		t.Parallel()
		srv := connectortest.CutServer(t, "")
		_, err := connectors.Send(client(), post(t, context.Background(), srv.URL, nil))
		if k := connectortest.Kind(t, err); k != connectors.KindOutcomeUnknown {
			t.Errorf("kind = %s (%v)", k, err)
		}
	})
	// The first server ran the request and redirected it to an address
	// nobody listens on: that the second connection was refused does not
	// make the call unreachable.
	t.Run("redirected to a closed port", func(t *testing.T) {
		t.Parallel()
		closed := "http://" + connectortest.ClosedAddr(t) + "/"
		srv := watch(t, false, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, closed, http.StatusTemporaryRedirect)
		})
		_, err := connectors.Send(client(), post(t, context.Background(), srv.URL, nil))
		if k := connectortest.Kind(t, err); k != connectors.KindOutcomeUnknown {
			t.Errorf("kind = %s (%v)", k, err)
		}
		if n := srv.requests.Load(); n != 1 {
			t.Errorf("the server got %d requests, want 1", n)
		}
	})
}

// Over HTTP/2 too, on a new connection and on one reused: the server reads
// the request and resets the stream without answering.
func TestSendMaybeSentHTTP2(t *testing.T) {
	t.Parallel()
	srv := watch(t, true, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/abort" {
			panic(http.ErrAbortHandler)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	_, err := connectors.Send(srv.Client(), post(t, context.Background(), srv.URL+"/abort", nil))
	if k := connectortest.Kind(t, err); k != connectors.KindOutcomeUnknown {
		t.Errorf("new connection: kind = %s (%v)", k, err)
	}
	c := srv.Client()
	resp, err := connectors.Send(c, post(t, context.Background(), srv.URL+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("the server answered over %s, not HTTP/2", resp.Proto)
	}
	_, err = connectors.Send(c, post(t, context.Background(), srv.URL+"/abort", nil))
	if k := connectortest.Kind(t, err); k != connectors.KindOutcomeUnknown {
		t.Errorf("reused connection: kind = %s (%v)", k, err)
	}
	if n := srv.requests.Load(); n != 3 {
		t.Errorf("the server got %d requests, want 3", n)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A RoundTripper other than *http.Transport may never report to the trace,
// so its silence proves nothing: its failures are classified as
// HTTPFailure does, outcome unknown unless the dial failed.
func TestSendOtherRoundTripper(t *testing.T) {
	t.Parallel()
	c := &http.Client{Transport: roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("lost after writing")
	})}
	_, err := connectors.Send(c, post(t, context.Background(), "http://example.com/", http.Header{"X-A": {"a\r\nb"}}))
	if k := connectortest.Kind(t, err); k != connectors.KindOutcomeUnknown {
		t.Errorf("kind = %s (%v)", k, err)
	}
}

// A failed round trip's error ends up in logs: it names the tool's URL as
// ShownURL shows it, without what of its query, user information or path
// may hold a credential.
func TestSendErrorHidesURLSecrets(t *testing.T) {
	t.Parallel()
	srv := connectortest.CutServer(t, "")
	secretURL := strings.Replace(srv.URL, "http://", "http://user:pw-SECRET@", 1) + "/p/tok3n0123456789SECRET/x?api_key=q-SECRET#f-SECRET"
	other := &http.Client{Transport: roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("lost after writing")
	})}
	for name, c := range map[string]*http.Client{"traced": client(), "other round tripper": other} {
		_, err := connectors.Send(c, post(t, context.Background(), secretURL, nil))
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if msg := err.Error(); strings.Contains(msg, "SECRET") || !strings.Contains(msg, "/p/****/x?api_key=****") {
			t.Errorf("%s: the error reads %q; want the URL without its secrets", name, msg)
		}
	}
}
