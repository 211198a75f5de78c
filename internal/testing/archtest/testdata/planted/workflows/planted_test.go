// Tests may import anything: this import is not a violation.
package workflows

import "github.com/tickgate/tickgate/store"

var _ = store.RunFailed
