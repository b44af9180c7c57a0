package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
)

// Go's runtime has a monitor thread, sysmon, that sleeps deeply whenever
// every P is idle; the next system call wakes it, and it then polls every
// 20 µs until the process is idle again (golang/go#18236). A proxy idles
// between short bursts of work on every request (waiting on its caller,
// then on the tool), so each request wakes sysmon more than once: on the
// benchmark machine that was about a fifth of Quiver's CPU time per call,
// in a futex wake-up on the request's own path and in sysmon's polling.
//
// While GODEBUG's schedtrace is set, sysmon never sleeps deeply: with
// nothing to do it backs off to a poll every 10 ms, and it is back at 20 µs
// as soon as a thread stays in a system call long enough to need it.
// schedtrace also has the runtime write a scheduler line to stderr every
// so many milliseconds: at the largest value, once every 24.8 days of the
// host's uptime, which on a host up longer than that means one line at
// each start; and a scheduler dump ahead of the stack traces when the
// process dies of a fatal error or SIGQUIT.
//
// serveGODEBUG is what serve sets when GODEBUG does not set schedtrace.
const serveGODEBUG = "schedtrace=2147483647"

// sysmonNote says why serve runs without serveGODEBUG when that was not
// the operator's choice; serve logs it.
var sysmonNote string

// reexecServe runs this binary again, in this process, with serveGODEBUG
// added to GODEBUG: the runtime reads schedtrace only at start. It returns
// without doing anything when GODEBUG already sets schedtrace (the
// operator's own choice, such as schedtrace=0 for the runtime's default, or
// this binary after the exec), under a debugger or tracer (which would not
// follow the exec), and when the binary cannot be run again as it is.
func reexecServe() {
	env, ok := serveEnv(os.Environ())
	if !ok {
		return
	}
	if traced() {
		sysmonNote = "a debugger or tracer is attached"
		return
	}
	path, err := selfPath()
	if err != nil {
		sysmonNote = err.Error()
		return
	}
	err = syscall.Exec(path, os.Args, env) // returns only when the exec failed
	sysmonNote = "running it again failed: " + err.Error()
}

// selfPath is the path to run this binary again by: the one it was
// started by, so that the process keeps its name (a symlink's, say), else
// the binary's own, as long as it is the binary running. One replaced or
// removed since the start is not run.
func selfPath() (string, error) {
	running, err := os.Stat("/proc/self/exe")
	if err != nil {
		return "", err
	}
	var paths []string
	if p := os.Args[0]; strings.Contains(p, "/") {
		paths = append(paths, p)
	} else if p, err := exec.LookPath(p); err == nil {
		paths = append(paths, p)
	}
	if p, err := os.Executable(); err == nil {
		paths = append(paths, p)
	}
	for _, p := range paths {
		if onDisk, err := os.Stat(p); err == nil && os.SameFile(running, onDisk) {
			return p, nil
		}
	}
	return "", errors.New("the binary on disk is not the one running (replaced or removed since the start)")
}

// traced reports whether a tracer (a debugger, strace) is attached.
func traced() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	_, rest, ok := bytes.Cut(b, []byte("\nTracerPid:"))
	if !ok {
		return false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	return string(bytes.TrimSpace(line)) != "0"
}

// serveEnv is env with serveGODEBUG added to GODEBUG, or false when GODEBUG
// sets schedtrace already. The first GODEBUG entry is the one that counts,
// and a field counts as the runtime reads it: exactly "schedtrace=…".
func serveEnv(env []string) ([]string, bool) {
	i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	if i < 0 {
		return append(slices.Clip(env), "GODEBUG="+serveGODEBUG), true
	}
	godebug := strings.TrimPrefix(env[i], "GODEBUG=")
	for field := range strings.SplitSeq(godebug, ",") {
		if strings.HasPrefix(field, "schedtrace=") {
			return env, false
		}
	}
	out := slices.Clone(env)
	if godebug == "" {
		out[i] = "GODEBUG=" + serveGODEBUG
	} else {
		out[i] = "GODEBUG=" + godebug + "," + serveGODEBUG
	}
	return out, true
}
