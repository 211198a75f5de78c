package workflows_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// historyOf reads a schedule's history, oldest first.
func (s *ScheduleWorkflowSuite) historyOf(name string) []store.ScheduleHistoryEntry {
	row, err := s.store.GetSchedule(context.Background(), name)
	s.Require().NoError(err)
	h, err := s.store.ScheduleHistory(context.Background(), row.ID, 0, 100)
	s.Require().NoError(err)
	for i, j := 0, len(h)-1; i < j; i, j = i+1, j-1 {
		h[i], h[j] = h[j], h[i]
	}
	return h
}

// Every pause and resume the workflow applies is in the schedule's history, written by the
// mirror write that applies it: who (the identity the command gave, else its door), how and
// why. A pause of a paused schedule changes nothing — its answer says so, the standing
// pause keeps its note — and records nothing; so does a resume of an active one. A signal's
// pause with no identity is "signal"'s.
func (s *ScheduleWorkflowSuite) TestPausesAndResumesAreInTheHistory() {
	in := s.createSchedule("history", schedulespec.Spec{Cron: "0 * * * *"}, s.t0, nil)
	var answers []workflows.ScheduleDescription
	answer := func(r any, err error) {
		s.Require().NoError(err)
		answers = append(answers, r.(workflows.ScheduleDescription))
	}
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.SchedulePause, workflows.PauseRequest{Note: "billing freeze", Identity: "billing-service"}, answer)
	}, time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.SchedulePause, workflows.PauseRequest{Note: "another reason"}, answer)
	}, 2*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.update(workflows.ScheduleResume, workflows.ResumeRequest{Note: "freeze over", Identity: "billing-service"}, answer)
	}, 3*time.Second)
	s.env.RegisterDelayedCallback(func() { s.update(workflows.ScheduleResume, nil, answer) }, 4*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.SchedulePause, json.RawMessage(`{"note":"from a signal"}`))
	}, 5*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.ScheduleResume, json.RawMessage(`{"identity":"ops-cron"}`))
	}, 6*time.Second)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.ScheduleResume, json.RawMessage(`{"note":7}`)) // refused: changes nothing
	}, 7*time.Second)
	s.stopAt(10 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Require().Len(answers, 4)
	s.True(answers[0].Changed)
	s.False(answers[1].Changed, "paused already")
	s.Equal("billing freeze", answers[1].Note, "the standing pause keeps its note")
	s.True(answers[2].Changed)
	s.False(answers[3].Changed, "active already")

	type entry struct {
		Kind  string
		Actor string
		Door  string
		Note  string
	}
	var got []entry
	for _, h := range s.historyOf("history") {
		got = append(got, entry{h.Kind, h.Actor, h.Door, h.Note})
		s.JSONEq(`[]`, string(h.Changes))
	}
	s.Equal([]entry{
		{string(domain.HistoryPause), "billing-service", "update", "billing freeze"},
		{string(domain.HistoryResume), "billing-service", "update", "freeze over"},
		{string(domain.HistoryPause), "signal", "signal", "from a signal"},
		{string(domain.HistoryResume), "ops-cron", "signal", ""},
	}, got)
	row, err := s.store.GetSchedule(context.Background(), "history")
	s.Require().NoError(err)
	s.False(row.Paused)
	refused, err := s.store.ScheduleRefusals(context.Background(), row.ID, 10)
	s.Require().NoError(err)
	s.Require().Len(refused, 1, "the bad resume signal is recorded as refused")
	s.Equal("note", refused[0].Field)
}

// A pause or resume whose identity or note breaks the rules is refused at the update's door
// as at the API's, and nothing is recorded.
func (s *ScheduleWorkflowSuite) TestPauseWithAnOverlongIdentityIsRefused() {
	in := s.createSchedule("refused-identity", schedulespec.Spec{Cron: "0 * * * *"}, s.t0, nil)
	var pauseErr, resumeErr error
	s.env.RegisterDelayedCallback(func() {
		s.refusedUpdate(workflows.SchedulePause, workflows.PauseRequest{Identity: string(make([]byte, workflows.MaxIdentity+1))}, &pauseErr)
		s.refusedUpdate(workflows.ScheduleResume, workflows.ResumeRequest{Note: string(make([]byte, workflows.MaxPauseNote+1))}, &resumeErr)
	}, time.Second)
	s.stopAt(5 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)
	s.Require().Error(pauseErr)
	s.Equal("identity", workflows.RefusalOf(pauseErr).Field)
	s.Require().Error(resumeErr)
	s.Equal("note", workflows.RefusalOf(resumeErr).Field)
	s.Empty(s.historyOf("refused-identity"))
}
