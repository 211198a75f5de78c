// The binary's entry point may wire the tooling in as subcommands.
package main

import "github.com/tickgate/tickgate/internal/dev/devstack"

var _ = devstack.Start

func main() {}
