package domain_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
)

func TestOverlapValidAcceptsExactlyThePolicies(t *testing.T) {
	for _, o := range domain.Overlaps {
		require.True(t, o.Valid(), o)
	}
	for _, o := range []domain.Overlap{"", "SKIP", "buffer", "allow-all"} {
		require.False(t, o.Valid(), o)
	}
	require.Equal(t, domain.OverlapSkip, domain.DefaultOverlap)
}

func TestActionNormalizeFillsEventDefaultsAndNamesTheWrongField(t *testing.T) {
	ev := domain.Action{Kind: domain.ActionEvent}
	require.NoError(t, ev.Normalize())
	require.Equal(t, domain.DefaultEventTopic, ev.Topic)
	require.Equal(t, domain.DefaultEventType, ev.Type)

	cases := map[string]struct {
		action domain.Action
		field  string
	}{
		"no kind":                 {domain.Action{}, "kind"},
		"unknown kind":            {domain.Action{Kind: "cron"}, "kind"},
		"workflow without type":   {domain.Action{Kind: domain.ActionWorkflow, TaskQueue: "q"}, "workflow_type"},
		"workflow without queue":  {domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "W"}, "task_queue"},
		"event with a task queue": {domain.Action{Kind: domain.ActionEvent, TaskQueue: "q"}, ""},
		"workflow with data":      {domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "W", TaskQueue: "q", Data: json.RawMessage(`{}`)}, ""},
	}
	for name, c := range cases {
		err := c.action.Normalize()
		var fe *domain.FieldError
		require.True(t, errors.As(err, &fe), "%s: %v", name, err)
		require.Equal(t, c.field, fe.Field, name)
	}
}

func TestValidatePayloadNamesThePayloadField(t *testing.T) {
	require.NoError(t, domain.ValidatePayload(domain.ExecutorNoop, nil))
	require.NoError(t, domain.ValidatePayload(domain.ExecutorHTTP, json.RawMessage(`{"url":"https://example.test/hook"}`)))
	cases := map[string]struct {
		executor domain.Executor
		payload  string
		field    string
	}{
		"noop sleep too long": {domain.ExecutorNoop, `{"sleep":"2h"}`, "sleep"},
		"noop unknown key":    {domain.ExecutorNoop, `{"nap":"1s"}`, "nap"},
		"http relative url":   {domain.ExecutorHTTP, `{"url":"/hook"}`, "url"},
		"sql without sql":     {domain.ExecutorSQL, `{}`, "statement"},
		"external not object": {domain.ExecutorExternal, `[1]`, ""},
	}
	for name, c := range cases {
		err := domain.ValidatePayload(c.executor, json.RawMessage(c.payload))
		var pe *domain.PayloadError
		require.True(t, errors.As(err, &pe), "%s: %v", name, err)
		require.Equal(t, c.field, pe.Field, name)
	}
	var pe *domain.PayloadError
	err := domain.ValidatePayload("shell", nil)
	require.Error(t, err)
	require.False(t, errors.As(err, &pe), "an unknown executor is not a payload error")
}

func TestKeysAreOnePerTickAndPerRequest(t *testing.T) {
	tick := time.Date(2026, 11, 23, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	require.Equal(t, "7@2026-11-23T08:00:00Z", domain.TickKey(7, tick), "the tick key is in UTC whatever the zone")
	require.NotEqual(t, domain.TickKey(7, tick), domain.TickKey(8, tick))
	require.Equal(t, "7@manual/req-1", domain.ManualKey(7, "req-1"))
}

func TestTDFinalIsTheThreeFinalStatuses(t *testing.T) {
	final := map[domain.ExecutionStatus]bool{domain.ExecutionSucceeded: true, domain.ExecutionFailedFinal: true, domain.ExecutionCanceled: true}
	for _, s := range []domain.ExecutionStatus{domain.ExecutionCreated, domain.ExecutionSent, domain.ExecutionAcked, domain.ExecutionRetryScheduled, domain.ExecutionSucceeded, domain.ExecutionFailedFinal, domain.ExecutionCanceled} {
		require.Equal(t, final[s], domain.ExecutionFinal(s), s)
	}
}
