-- Device dispatch (docs/devices.md): PCs and their devices. A device is in the eligible set
-- when devices.eligible (a generated column, migrations/00007) is true.

-- name: InsertPC :one
INSERT INTO pcs (name, device_capacity) VALUES (@name, @device_capacity) RETURNING *;

-- name: GetPCByName :one
SELECT * FROM pcs WHERE name = @name;

-- name: ListPCs :many
SELECT * FROM pcs WHERE id > @after_id ORDER BY id LIMIT @max_rows;

-- name: PCSummary :one
SELECT * FROM pc_device_summary WHERE pc_id = @pc_id;

-- name: PCSummaries :many
SELECT * FROM pc_device_summary ORDER BY pc_id;

-- name: InsertDevice :one
INSERT INTO devices (pc_id, serial) VALUES (@pc_id, @serial) RETURNING *;

-- name: GetDeviceBySerial :one
SELECT * FROM devices WHERE serial = @serial;

-- name: GetDeviceRowBySerial :one
SELECT d.id, d.pc_id, d.serial, d.status, d.error, d.created_at, d.updated_at, p.name AS pc_name
FROM devices d JOIN pcs p ON p.id = d.pc_id
WHERE d.serial = @serial;

-- name: ListDevicesOfPC :many
SELECT * FROM devices WHERE pc_id = @pc_id ORDER BY id;

-- name: ListDevicesPage :many
SELECT d.id, d.pc_id, d.serial, d.status, d.error, d.created_at, d.updated_at, p.name AS pc_name
FROM devices d JOIN pcs p ON p.id = d.pc_id
WHERE d.id > @after_id
ORDER BY d.id
LIMIT @max_rows;

-- name: SetDeviceStatus :one
UPDATE devices
SET status = @status, error = CASE WHEN @status::text = 'error' THEN @error::text ELSE '' END, updated_at = now()
WHERE serial = @serial
RETURNING *;

-- name: SetDeviceErrorByID :exec
UPDATE devices SET status = 'error', error = @error, updated_at = now() WHERE id = @id;
