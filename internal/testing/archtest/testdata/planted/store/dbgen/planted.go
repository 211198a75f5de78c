// A package below store is covered by store's rule.
package dbgen

import "github.com/tickgate/tickgate/api"

var _ = api.Server{}
