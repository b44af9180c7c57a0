package accounts

import "time"

// SetClock makes s read the time from now, so that a test moves it past a
// TTL instead of sleeping through it.
func SetClock(s *Service, now func() time.Time) { s.now = now }
