package main

import (
	"os"
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
// so many milliseconds; at the largest value that is once every 24.8 days
// of the host's uptime (and once at start on a host up longer than that),
// and a scheduler dump ahead of the stack traces when the process dies of
// a panic.
//
// serveGODEBUG is what serve sets when GODEBUG does not name schedtrace.
const serveGODEBUG = "schedtrace=2147483647"

// reexecServe runs this binary again, in this process, with serveGODEBUG
// added to GODEBUG: the runtime reads schedtrace only at start. It returns
// without doing anything when GODEBUG already names schedtrace (the
// operator's own choice, such as schedtrace=0 for the runtime's default, or
// this binary after the exec), and when the binary cannot be run again.
func reexecServe() {
	env, ok := serveEnv(os.Environ())
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	syscall.Exec(exe, os.Args, env) // returns only when the exec failed: serve as we are
}

// serveEnv is env with serveGODEBUG added to GODEBUG, or false when GODEBUG
// names schedtrace already.
func serveEnv(env []string) ([]string, bool) {
	i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	if i < 0 {
		return append(slices.Clip(env), "GODEBUG="+serveGODEBUG), true
	}
	godebug := strings.TrimPrefix(env[i], "GODEBUG=")
	for field := range strings.SplitSeq(godebug, ",") {
		if key, _, _ := strings.Cut(field, "="); strings.TrimSpace(key) == "schedtrace" {
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
