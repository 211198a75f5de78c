package workflows_test

import (
	"time"
)

// future runs the test clock a day ahead of the database's: a retraction keeps the armed
// fires whose visible time has come by the database's clock (now()), so the ticks of these
// tests must lie ahead of it.
func (s *ScheduleWorkflowSuite) future() {
	s.t0 = time.Now().UTC().Add(24 * time.Hour).Truncate(time.Hour)
	s.env.SetStartTime(s.t0)
}
