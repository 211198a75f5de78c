// Command clidocs writes the CLI's reference pages (make generate-cli-docs):
// `go run ./internal/dev/clidocs docs/cli`.
package main

import (
	"fmt"
	"os"

	"github.com/tickgate/tickgate/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: clidocs DIR")
		os.Exit(2)
	}
	if err := cli.WriteReference(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
