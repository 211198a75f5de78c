package devstack_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// TestTemporalServerIsTheProductionShape starts the real server the way
// `TICKGATE_DEV_TEMPORAL=server make dev` does and checks what the CLI reports about it:
// PostgreSQL persistence and visibility, four history shards; the `default` namespace with
// tickgate's search attributes; the Web UI answering. A restart reruns the schema update and
// the registration without error and keeps a running workflow.
func TestTemporalServerIsTheProductionShape(t *testing.T) {
	s := testenv.StartTemporalServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	cli, err := devstack.TemporalBinary(ctx, root, nil)
	require.NoError(t, err)
	describe := func() map[string]any {
		out, err := exec.CommandContext(ctx, cli, "operator", "cluster", "describe", "-o", "json", "--address", s.Address()).Output()
		require.NoError(t, err, "temporal operator cluster describe")
		var info map[string]any
		require.NoError(t, json.Unmarshal(out, &info), "%s", out)
		return info
	}
	info := describe()
	require.Equal(t, "postgres12", info["persistenceStore"], "persistence: %v", info)
	require.Equal(t, "postgres12", info["visibilityStore"], "visibility: %v", info)
	require.EqualValues(t, devstack.DefaultHistoryShards, info["historyShardCount"], "history shards: %v", info)
	require.Equal(t, "1.29.1", info["serverVersion"], "the version the pinned CLI embeds")

	c, err := client.DialContext(ctx, client.Options{HostPort: s.Address(), Namespace: "default"})
	require.NoError(t, err)
	defer c.Close()
	requireSearchAttributes := func() {
		sas, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
		require.NoError(t, err)
		for _, sa := range devstack.SearchAttributes {
			require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, sas.GetCustomAttributes()[sa], "search attribute %s", sa)
		}
	}
	requireSearchAttributes()

	get := func(path string) string {
		resp, err := http.Get("http://" + s.UIAddress() + path)
		require.NoError(t, err, "Web UI %s", path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "Web UI %s: %s", path, body)
		return string(body)
	}
	require.Contains(t, get("/"), "/_app/", "the UI's page")
	// The UI's own API reaches this server: it describes the namespace with its search attributes.
	require.Contains(t, get("/api/v1/namespaces/default"), `"name": "default"`)

	// A workflow no worker serves stays running across a restart of the server.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "survives-restart", TaskQueue: "nobody"}, "Nothing")
	require.NoError(t, err)
	require.NoError(t, s.Stop())
	require.NoError(t, s.Start(ctx), "a second start updates the schemas and registers again without error")
	// The client from before the restart reconnects on its own, after gRPC's dial backoff.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
		assert.NoError(ct, err)
	}, time.Minute, 250*time.Millisecond, "the old client reaches the restarted server")
	requireSearchAttributes()
	require.EqualValues(t, devstack.DefaultHistoryShards, describe()["historyShardCount"])
	d, err := c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
}
