package store

import (
	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/workflows"
)

var _ = pgx.Identifier{}
var _ = workflows.ScheduleWorkflowType
