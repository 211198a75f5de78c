package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// DeviceRow is a device with its PC's name.
type DeviceRow = dbgen.ListDevicesPageRow

// PCDetail is a PC with its slots and devices.
type PCDetail struct {
	PC      PC
	Slots   PCSummary
	Devices []Device
}

// CreatePC inserts a PC; a taken name is ErrConflict.
func (s *Store) CreatePC(ctx context.Context, name string, capacity int32) (PC, error) {
	pc, err := s.Q.InsertPC(ctx, dbgen.InsertPCParams{Name: name, DeviceCapacity: capacity})
	if err != nil {
		return PC{}, fmt.Errorf("insert pc %q: %w", name, mapErr(err))
	}
	return pc, nil
}

// GetPC reads a PC by name.
func (s *Store) GetPC(ctx context.Context, name string) (PC, error) {
	pc, err := s.Q.GetPCByName(ctx, name)
	if err != nil {
		return PC{}, fmt.Errorf("get pc %q: %w", name, mapErr(err))
	}
	return pc, nil
}

// GetPCDetail reads a PC with its slot summary and devices.
func (s *Store) GetPCDetail(ctx context.Context, name string) (PCDetail, error) {
	pc, err := s.GetPC(ctx, name)
	if err != nil {
		return PCDetail{}, err
	}
	sum, err := s.Q.PCSummary(ctx, pc.ID)
	if err != nil {
		return PCDetail{}, fmt.Errorf("slots of pc %q: %w", name, mapErr(err))
	}
	devs, err := s.Q.ListDevicesOfPC(ctx, pc.ID)
	if err != nil {
		return PCDetail{}, fmt.Errorf("devices of pc %q: %w", name, mapErr(err))
	}
	return PCDetail{PC: pc, Slots: sum, Devices: devs}, nil
}

// ListPCs pages through PCs by id.
func (s *Store) ListPCs(ctx context.Context, afterID int64, limit int) ([]PC, error) {
	rows, err := s.Q.ListPCs(ctx, dbgen.ListPCsParams{AfterID: afterID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list pcs: %w", mapErr(err))
	}
	return rows, nil
}

// PCSummaries returns every PC's slots (eligible, running, target).
func (s *Store) PCSummaries(ctx context.Context) ([]PCSummary, error) {
	rows, err := s.Q.PCSummaries(ctx)
	if err != nil {
		return nil, fmt.Errorf("pc summaries: %w", mapErr(err))
	}
	return rows, nil
}

// CreateDevice adds a device to a PC and, in the same transaction, fills the PC's free
// slots, so the new device takes work at once.
func (s *Store) CreateDevice(ctx context.Context, pcName, serial string) (Device, []int64, error) {
	var dev Device
	var ids []int64
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		pc, err := q.GetPCByName(ctx, pcName)
		if err != nil {
			return fmt.Errorf("pc %q: %w", pcName, mapErr(err))
		}
		dev, err = q.InsertDevice(ctx, dbgen.InsertDeviceParams{PcID: pc.ID, Serial: serial})
		if err != nil {
			return fmt.Errorf("insert device %q: %w", serial, mapErr(err))
		}
		ids, err = refillPC(ctx, q, pc.ID, false)
		return err
	})
	return dev, ids, err
}

// GetDevice reads a device by serial, with its PC's name.
func (s *Store) GetDevice(ctx context.Context, serial string) (DeviceRow, error) {
	d, err := s.Q.GetDeviceRowBySerial(ctx, serial)
	if err != nil {
		return DeviceRow{}, fmt.Errorf("get device %q: %w", serial, mapErr(err))
	}
	return DeviceRow(d), nil
}

// ListDevices pages through every device by id.
func (s *Store) ListDevices(ctx context.Context, afterID int64, limit int) ([]DeviceRow, error) {
	rows, err := s.Q.ListDevicesPage(ctx, dbgen.ListDevicesPageParams{AfterID: afterID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", mapErr(err))
	}
	return rows, nil
}

// SetDeviceStatus sets a device's status (an operator resetting it from error, taking it
// offline…) and applies it to the PC's slots in the same transaction: executions holding
// a slot on a device that left the eligible set are canceled, free slots are refilled.
func (s *Store) SetDeviceStatus(ctx context.Context, serial string, status domain.DeviceStatus, errText string) (Device, []int64, error) {
	var dev Device
	var ids []int64
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		// Lock the device's executions first: a result finishing one of them locks it, then
		// the device; taking them in the same order cannot deadlock, and once the device
		// leaves the eligible set every one of them is canceled below (none skipped).
		if _, err := q.LockActiveOfDevice(ctx, serial); err != nil {
			return fmt.Errorf("lock executions of device %q: %w", serial, mapErr(err))
		}
		var err error
		dev, err = q.SetDeviceStatus(ctx, dbgen.SetDeviceStatusParams{Status: status, Error: errText, Serial: serial})
		if err != nil {
			return fmt.Errorf("set device %q %s: %w", serial, status, mapErr(err))
		}
		ids, err = refillPC(ctx, q, dev.PcID, true)
		return err
	})
	return dev, ids, err
}
