package store

import (
	"context"
	"fmt"
)

// PCSlots answers a PC's summary and the executions holding its numbered slots, by slot
// (store/queries/slots.sql): the console's slot grid.
func (s *Store) PCSlots(ctx context.Context, name string) (PC, PCSummary, []DeviceExecutionView, error) {
	pc, err := s.GetPC(ctx, name)
	if err != nil {
		return PC{}, PCSummary{}, nil, err
	}
	sum, err := s.Q.PCSummary(ctx, pc.ID)
	if err != nil {
		return PC{}, PCSummary{}, nil, fmt.Errorf("slots of pc %q: %w", name, mapErr(err))
	}
	rows, err := s.Q.PCSlotExecutions(ctx, pc.ID)
	if err != nil {
		return PC{}, PCSummary{}, nil, fmt.Errorf("executions in the slots of pc %q: %w", name, mapErr(err))
	}
	out := make([]DeviceExecutionView, len(rows))
	for i, r := range rows {
		out[i] = DeviceExecutionView(r)
	}
	return pc, sum, out, nil
}
