// Package redissession stores sessions, session locks and invocation status
// records in Redis (go-redis v9): a Service, a Locker and an
// InvocationStore that pass the conformance suites in sessiontest.
//
// Layout (all keys start with Config.Prefix; key segments are escaped, see
// escape, so a ':' in an id cannot collide; the part in braces is a Redis
// Cluster hash tag, so one session's keys share a slot and its MULTI/EXEC
// transactions and scripts are valid on a cluster; the Gate's scripts also
// touch an invocation record, so it needs a standalone Redis):
//
//	<prefix>sess:{<app>:<user>:<session>}:events  list of JSON events, in append order
//	<prefix>sess:{<app>:<user>:<session>}:state   hash: state key → JSON value
//	<prefix>sess:{<app>:<user>:<session>}:meta    hash: created_at (the session exists)
//	<prefix>lock:{<app>:<user>:<session>}         string: owner token, PX = lease
//	<prefix>inv:{<invocation id>}                 hash: the invocation record, PX = retention
//
// Every operation is one round trip (a MULTI/EXEC pipeline or a Lua
// script), so it is atomic, and nothing scans the keyspace: every key is
// computed from a session key or an invocation id. Lease expiry is Redis's
// own key expiry, measured by the server's clock.
package redissession
