package cooldown

import "time"

// SetStatusCacheClock makes c read the time from now instead of time.Now
// (tests only).
func SetStatusCacheClock(c *StatusCache, now func() time.Time) { c.now = now }
