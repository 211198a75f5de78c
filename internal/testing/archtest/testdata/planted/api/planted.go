package api

import (
	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

var _ = activities.ValidatePayload
var _ = starter.Starter{}
var _ = store.Store{}
