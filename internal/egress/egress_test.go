package egress

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestAllowed(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1":        false,
		"127.8.9.10":       false,
		"10.1.2.3":         false,
		"172.16.0.1":       false,
		"192.168.1.1":      false,
		"169.254.169.254":  false, // cloud metadata
		"100.64.0.1":       false, // carrier-grade NAT
		"0.0.0.0":          false,
		"224.0.0.1":        false,
		"::1":              false,
		"fe80::1":          false,
		"fc00::1":          false,
		"::ffff:127.0.0.1": false, // v4-mapped loopback
		"::":               false,
		"8.8.8.8":          true,
		"2001:4860::8888":  true,
		"::ffff:8.8.8.8":   true,
	}
	for s, want := range cases {
		if got := Allowed(netip.MustParseAddr(s), Options{}); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", s, got, want)
		}
		if !Allowed(netip.MustParseAddr(s), Options{AllowPrivate: true}) {
			t.Errorf("AllowPrivate refused %s", s)
		}
	}
}

// The guard acts at dial time, after name resolution: "localhost" is
// refused like 127.0.0.1, and nothing reaches the server.
func TestTransportRefusesLoopbackAtDialTime(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	client := &http.Client{Transport: Transport(Options{})}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://"+net.JoinHostPort(host, port)+"/", nil)
		_, err := client.Do(req)
		if err == nil || !IsBlocked(err) || !IsConnectFailure(err) {
			t.Fatalf("%s: err = %v, want a blocked dial", host, err)
		}
	}
	if hits != 0 {
		t.Fatalf("the server was reached %d times", hits)
	}
	allowed := &http.Client{Transport: Transport(Options{AllowPrivate: true})}
	resp, err := allowed.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if hits != 1 {
		t.Fatalf("with AllowPrivate the server was reached %d times", hits)
	}
}
