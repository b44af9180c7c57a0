package mcp

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// legacyStatus reports whether status is what an HTTP+SSE server (MCP's
// transport before streamable HTTP) answers the POST that opens a
// streamable-HTTP session: it takes POSTs only at its session's message
// URL, so its event-stream URL refuses them (400 without a session ID, as
// the Go SDK's does; 404 or 405 elsewhere).
func legacyStatus(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// legacyProbeTimeout bounds legacySSE.
const legacyProbeTimeout = 3 * time.Second

// legacySSE reports whether tgt is an HTTP+SSE server's event-stream URL:
// a GET of it opens an event stream whose first event is "endpoint" (the
// URL to POST messages to). Used only to explain a failed configuration;
// the stream is closed once that event is read.
func (c *Connector) legacySSE(ctx context.Context, tgt *target) bool {
	ctx, cancel := context.WithTimeout(ctx, legacyProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tgt.endpoint, nil)
	if err != nil {
		return false
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.client(c.transport, tgt).Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return false
	}
	lines := bufio.NewScanner(io.LimitReader(resp.Body, 4<<10))
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if line == "" {
			return false // the first event ended without naming itself endpoint
		}
		if name, ok := strings.CutPrefix(line, "event:"); ok {
			return strings.TrimSpace(name) == "endpoint"
		}
	}
	return false
}
