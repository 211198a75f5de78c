// Command schema writes store/schema.sql (`make schema`): the migrations applied to a
// throwaway database on the test harness's PostgreSQL cluster (started under .dev/test if it
// is not running), dumped by the machine's pg_dump and normalised (internal/testing/schemadump).
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/internal/testing/schemadump"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

func main() {
	out := flag.String("out", "", "where to write the schema (default: store/schema.sql in the repository)")
	flag.Parse()
	log.SetFlags(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if *out == "" {
		root, err := devstack.RepoRoot()
		if err != nil {
			log.Fatalf("schema: %v", err)
		}
		*out = filepath.Join(root, schemadump.Path)
	}
	admin, err := testenv.ClusterURL()
	if err != nil {
		log.Fatalf("schema: the test cluster: %v", err)
	}
	schema, err := schemadump.Generate(ctx, admin)
	if err != nil {
		log.Fatalf("schema: %v", err)
	}
	if err := os.WriteFile(*out, []byte(schema), 0o644); err != nil { // #nosec G306 -- store/schema.sql, a file of the repository
		log.Fatalf("schema: %v", err)
	}
	log.Printf("wrote %s", *out)
}
