package devstack

import "go.temporal.io/sdk/log"

// quietLogger drops the SDK's log lines: the registration client retries while the server
// starts, and its connection warnings are expected there.
type quietLogger struct{}

var _ log.Logger = quietLogger{}

func (quietLogger) Debug(string, ...interface{}) {}
func (quietLogger) Info(string, ...interface{})  {}
func (quietLogger) Warn(string, ...interface{})  {}
func (quietLogger) Error(string, ...interface{}) {}
