//go:build unix

package nowait_test

import (
	"bytes"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/nowait"
)

// pair returns the two ends of a loopback TCP connection.
func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestRead(t *testing.T) {
	client, server := pair(t)
	s := nowait.New(server)
	buf := make([]byte, 16)
	if n := s.Read(buf); n != 0 {
		t.Fatalf("read %d bytes of nothing", n)
	}
	client.Write([]byte("hello"))
	deadline := time.Now().Add(5 * time.Second)
	n := 0
	for n == 0 && time.Now().Before(deadline) {
		n = s.Read(buf)
	}
	if string(buf[:n]) != "hello" {
		t.Fatalf("read %q", buf[:n])
	}
	// The connection still reads as usual after it.
	client.Write([]byte("again"))
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := server.Read(buf); err != nil || string(buf[:n]) != "again" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
}

func TestWrite(t *testing.T) {
	client, server := pair(t)
	// A small send buffer, and a client that reads nothing.
	rc, _ := server.(*net.TCPConn).SyscallConn()
	rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096) })
	s := nowait.New(server)
	if n := s.Write([]byte("hello")); n != 5 {
		t.Fatalf("wrote %d of 5 bytes to an empty socket", n)
	}
	big := bytes.Repeat([]byte("x"), 64<<20)
	n := s.Write(big)
	if n == 0 || n == len(big) {
		t.Fatalf("wrote %d of %d bytes to a client that reads nothing: want part", n, len(big))
	}
	if m := s.Write(big); m != 0 {
		t.Fatalf("wrote %d more bytes into a full socket", m)
	}
	got := make([]byte, 5)
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := client.Read(got); err != nil || string(got) != "hello" {
		t.Fatalf("the client read %q, %v", got, err)
	}
}

func TestNotASocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := nowait.New(a)
	if s != nil {
		t.Fatal("a pipe has a socket")
	}
	if s.Read(make([]byte, 1)) != 0 || s.Write([]byte("x")) != 0 {
		t.Fatal("a nil Socket read or wrote")
	}
}

func TestQuiet(t *testing.T) {
	client, server := pair(t)
	s := nowait.New(client)
	if !s.Quiet() {
		t.Fatal("an open, idle connection is not quiet")
	}
	server.Write([]byte("x"))
	waitFor(t, func() bool { return !s.Quiet() }, "data to make the connection not quiet")
	client.Read(make([]byte, 1))
	if !s.Quiet() {
		t.Fatal("not quiet once the data was read")
	}
	server.Close()
	waitFor(t, func() bool { return !s.Quiet() }, "a close to make the connection not quiet")
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for limit := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(limit) {
			t.Fatalf("waited 5 s for %s", what)
		}
	}
}
