// A workflow file that reaches into the SQL layer: the violation the rules exist for.
package workflows

import (
	"github.com/jackc/pgx/v5/pgtype"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/store"
)

var _ = pgtype.Text{}
var _ = workflow.Now
var _ = activities.X
var _ = store.RunFailed
