package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// refillPC fills a PC's free slots in bulk (D2): under the PC's row lock it cancels
// executions on devices that left the eligible set (when a device changed), then gives
// each free slot (target - running of them) the running task's next execution
// (device_slots_fill, migrations/00092_device_steps.sql). A result refills the slot it
// frees itself (refillSlot). With a target_count the task row is locked too, so PCs
// refilling at once never exceed it.
func refillPC(ctx context.Context, q *dbgen.Queries, pcID int64, cancelIneligible bool) ([]int64, error) {
	lock, err := q.LockPC(ctx, pcID)
	if err != nil {
		return nil, fmt.Errorf("lock pc %d: %w", pcID, mapErr(err))
	}
	if cancelIneligible {
		if _, err := q.CancelIneligibleOfPC(ctx, pcID); err != nil {
			return nil, fmt.Errorf("cancel ineligible executions of pc %d: %w", pcID, mapErr(err))
		}
	}
	if lock.RunningTaskID == nil {
		return nil, nil
	}
	if lock.RunningTargetCount != nil {
		if _, err := q.LockDeviceTask(ctx, *lock.RunningTaskID); err != nil {
			return nil, fmt.Errorf("lock task %d: %w", *lock.RunningTaskID, mapErr(err))
		}
	}
	ids, err := q.FillPCs(ctx, []int64{pcID})
	if err != nil {
		return nil, fmt.Errorf("refill pc %d: %w", pcID, mapErr(err))
	}
	return ids, nil
}

// refillSlot gives the slot td just freed (in this transaction) the running task's next
// execution on this PC, if the task has a device left there (D2: one freed slot, at most
// one new execution), by the step the group commit takes too (device_slots_fill). It takes
// no PC lock: the slot number and the device are each unique among slot holders, so
// results freeing different slots of one PC proceed in parallel. With a target_count the
// task row is locked, so the task's quota is never exceeded. ownTask is td's task as the
// caller read it: when it is running it is the running task (D1), which saves reading that
// again.
func refillSlot(ctx context.Context, q *dbgen.Queries, td DeviceExecution, ownTask DeviceTask) ([]int64, error) {
	if td.Slot == nil {
		return nil, fmt.Errorf("execution %d holds no numbered slot", td.ID)
	}
	task := ownTask
	if task.Status != domain.DeviceTaskRunning {
		var err error
		task, err = q.GetRunningDeviceTask(ctx)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("running task: %w", mapErr(err))
		}
	}
	if task.TargetCount != nil {
		if _, err := q.LockDeviceTask(ctx, task.ID); err != nil {
			return nil, fmt.Errorf("lock task %d: %w", task.ID, mapErr(err))
		}
	}
	created, err := q.FillSlot(ctx, dbgen.FillSlotParams{PcID: td.PcID, Slot: *td.Slot})
	if err != nil {
		return nil, fmt.Errorf("refill slot %d of pc %d: %w", *td.Slot, td.PcID, mapErr(err))
	}
	if created == 0 {
		return nil, nil // no device of this PC left for the task
	}
	return []int64{created}, nil
}

// RefillPC fills a PC's free slots in its own transaction and returns the new executions.
func (s *Store) RefillPC(ctx context.Context, pcID int64) ([]int64, error) {
	var ids []int64
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		ids, err = refillPC(ctx, q, pcID, true)
		return err
	})
	return ids, err
}

// RefillAll fills every PC's free slots in one transaction and one statement (a task just
// became active, or the dispatcher's safety sweep) and returns how many executions it
// created. It takes every PC's lock in id order, so it never over-fills a PC a concurrent
// result is refilling.
func (s *Store) RefillAll(ctx context.Context) (int, error) {
	var n int
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		pcIDs, err := q.LockAllPCs(ctx)
		if err != nil {
			return fmt.Errorf("lock pcs: %w", mapErr(err))
		}
		task, err := q.GetRunningDeviceTask(ctx)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("running task: %w", mapErr(err))
		}
		if task.TargetCount != nil {
			if _, err := q.LockDeviceTask(ctx, task.ID); err != nil {
				return fmt.Errorf("lock task %d: %w", task.ID, mapErr(err))
			}
		}
		ids, err := q.FillPCs(ctx, pcIDs)
		if err != nil {
			return fmt.Errorf("refill every pc: %w", mapErr(err))
		}
		n = len(ids)
		return nil
	})
	return n, err
}
