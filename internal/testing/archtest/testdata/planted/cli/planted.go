// The CLI is a client of the API: its layer lists no tickgate package, so the store is out.
package cli

import "github.com/tickgate/tickgate/store"

var _ = store.Store{}
