package metrics

import "github.com/tickgate/tickgate/internal/testing/testenv"

var _ = testenv.Main
