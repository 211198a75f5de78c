// Package domain is tickgate's shared vocabulary: the statuses, triggers, kinds, policies,
// keys and defaults that the rules (workflows), the side effects (activities), the SQL layer
// (store) and the HTTP surface (api) all speak. It does no I/O and imports nothing of the
// product but internal/schedulespec (pure itself: a schedule's spec and the durations its
// policies are written in), so deterministic workflow code and the API can use it without
// compiling against the database driver. The store imports domain, never the reverse: a
// status, kind or outcome the store writes is named here.
//
// The string values are the ones stored in PostgreSQL and sent over HTTP; the migrations'
// CHECK constraints list the same values, and sqlc's column overrides give generated rows
// these types.
package domain
