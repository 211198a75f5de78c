package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Bulk redrives (store/queries/redrive_jobs.sql; docs/schedules.md "Dead letter and
// redrive"): every dead-lettered run of a range, worked through in pages, each page one
// transaction that locks its job, redrives its runs (store.RedriveRun's rule, one by one)
// and moves the job's cursor past them. A page that fails changes nothing; a page that
// commits is counted. No run is looked at twice by one job.

// RedriveJob is a bulk redrive and its progress.
type RedriveJob = dbgen.RunRedriveJob

// RedriveRange is what a bulk redrive reaches: the dead-lettered runs (FAILED runs of http
// and workflow actions) whose tick lies in [Since, Until), of the schedules Selector reaches
// (none: every schedule).
type RedriveRange struct {
	Selector    domain.Selector
	Since       time.Time
	Until       time.Time
	RequestedBy string
}

// RedriveOutcome is what a page did with one run.
type RedriveOutcome struct {
	RunID    int64
	Schedule string
	// Redriven: RUNNING again under WorkflowID; else skipped, Reason saying why (it left the
	// dead letter meanwhile, or its schedule's action no longer starts a delivery).
	Redriven   bool
	WorkflowID string
	Reason     string
}

// RedrivePage is one page of a bulk redrive: what it did, and the job after it.
type RedrivePage struct {
	Job       RedriveJob
	Runs      []RedriveOutcome
	Remaining int
}

// StartRedriveJob begins a bulk redrive of r: it counts what it matches and answers the job.
func (s *Store) StartRedriveJob(ctx context.Context, r RedriveRange) (RedriveJob, error) {
	match, exclude := r.Selector.Containment()
	job, err := s.Q.CreateRedriveJob(ctx, dbgen.CreateRedriveJobParams{
		Selector: r.Selector.String(), Since: r.Since.UTC(), Until: r.Until.UTC(), RequestedBy: r.RequestedBy,
		LabelsMatch: match, LabelsExclude: exclude,
	})
	if err != nil {
		return RedriveJob{}, fmt.Errorf("begin a bulk redrive: %w", mapErr(err))
	}
	return job, nil
}

// RedriveJobPage redrives the next page of at most limit runs of job id, in one transaction
// (ErrNotFound: no such job).
func (s *Store) RedriveJobPage(ctx context.Context, id int64, limit int) (RedrivePage, error) {
	var page RedrivePage
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		page = RedrivePage{}
		job, err := q.LockRedriveJob(ctx, id)
		if err != nil {
			return fmt.Errorf("bulk redrive %d: %w", id, mapErr(err))
		}
		sel, err := domain.ParseSelector(job.Selector)
		if err != nil {
			return fmt.Errorf("bulk redrive %d: its selector: %w", id, err)
		}
		match, exclude := sel.Containment()
		ids, err := q.NextRedriveCandidates(ctx, dbgen.NextRedriveCandidatesParams{
			Since: job.Since, Until: job.Until, AfterID: job.Cursor, UpToRunID: job.UpToRunID,
			LabelsMatch: match, LabelsExclude: exclude, MaxRows: int4(limit),
		})
		if err != nil {
			return fmt.Errorf("bulk redrive %d: the next runs: %w", id, mapErr(err))
		}
		cursor, redriven, skipped := job.Cursor, 0, 0
		for _, runID := range ids {
			out, err := redriveRun(ctx, q, runID, &job.ID)
			var not *NotRedrivable
			switch {
			case errors.As(err, &not):
				page.Runs = append(page.Runs, RedriveOutcome{RunID: runID, Reason: not.Error()})
				skipped++
			case errors.Is(err, ErrNotFound):
				page.Runs = append(page.Runs, RedriveOutcome{RunID: runID, Reason: "the run is gone (its schedule was deleted)"})
				skipped++
			case err != nil:
				return err
			default:
				page.Runs = append(page.Runs, RedriveOutcome{RunID: runID, Schedule: out.ScheduleName, Redriven: true, WorkflowID: out.Run.WorkflowID})
				redriven++
			}
			cursor = runID
		}
		remaining, err := q.CountRedriveRemaining(ctx, dbgen.CountRedriveRemainingParams{
			Since: job.Since, Until: job.Until, AfterID: cursor, UpToRunID: job.UpToRunID, LabelsMatch: match, LabelsExclude: exclude,
		})
		if err != nil {
			return fmt.Errorf("bulk redrive %d: what remains: %w", id, mapErr(err))
		}
		page.Remaining = int(remaining)
		page.Job, err = q.AdvanceRedriveJob(ctx, dbgen.AdvanceRedriveJobParams{
			ID: id, Cursor: cursor, Redriven: int32(redriven), Skipped: int32(skipped), Done: remaining == 0,
		})
		if err != nil {
			return fmt.Errorf("bulk redrive %d: record the page: %w", id, mapErr(err))
		}
		return nil
	})
	if err != nil {
		return RedrivePage{}, err
	}
	return page, nil
}
