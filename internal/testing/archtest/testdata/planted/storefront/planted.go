// storefront only shares a prefix with store: store's rule does not cover it.
package storefront

import "github.com/tickgate/tickgate/api"

var _ = api.Server{}
