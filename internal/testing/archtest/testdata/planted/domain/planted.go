package domain

import (
	"os"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

var _ = os.Getenv
var _ = time.Now
var _ = temporal.NewApplicationError
var _ = schedulespec.Spec{}
var _ = store.RunFailed
