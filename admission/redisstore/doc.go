// Package redisstore holds the Redis backends of package admission: an
// idempotency Store shared by every process that talks to one Redis, and a
// GCRA tenant limiter whose quota a fleet of servers shares.
//
// It owns the Redis data layout (one string per idempotency key, one string
// per tenant), the Lua scripts that make check-and-set atomic, and the
// binary record format of a stored outcome. It refuses to own connection
// management (pass a configured go-redis client), retries (a failed call
// returns its error; admission.Config.TenantFailOpen and the engine decide),
// and anything on an event loop: every call is a network round trip, so the
// engine calls these from workers.
//
// Usage (with Redis OSS, disable go-redis's maintenance notifications: in
// their default auto mode go-redis v9.23.0 leaves a goroutine behind after
// Close):
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379",
//		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
//	store, _ := redisstore.NewStore(rdb, "sluice:idem:", admission.StoreConfig{})
//	c, err := store.Claim(ctx, time.Now(), key, admission.FingerprintOf(op, payload))
//	switch {
//	case err != nil: // Redis unavailable: answer 503
//	case c.State == admission.ClaimNew:
//		status, resp := handle()
//		_ = store.Finish(ctx, time.Now(), key, c.Token, status, resp)
//	case c.State == admission.ClaimDone: // replay c.Status, c.Response
//	default: // 409 (in progress, retry after c.RetryAfter) or 422 (mismatch)
//	}
//
//	lim, _ := redisstore.NewLimiter(rdb, "sluice:quota:", admission.Quota{Count: 100, Per: time.Second, Burst: 20})
//	d, err := lim.AllowN(ctx, time.Now(), tenantKey, 1)
//
// go-redis prints its own unstructured lines to stderr (pool dial errors
// while Redis is unreachable); RouteClientLogs(logger) sends them to a
// slog.Logger instead, one message for all of them so that a rate-limited
// handler holds a flood to a few lines.
package redisstore
