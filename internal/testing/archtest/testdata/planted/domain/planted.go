package domain

import (
	"net/url"
	"os"
	"time"

	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

var _ = os.Getenv
var _ = time.Now
var _ = url.Parse
var _ = schedulespec.Spec{}
var _ = store.RunFailed
