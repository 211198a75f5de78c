package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/worker"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRegisterSearchAttributes: on a namespace that lacks them, the worker's start-up hook
// adds tickgate's search attributes as Keyword; running it again is a no-op.
func TestRegisterSearchAttributes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := testenv.TemporalAddress(t)
	nsc, err := client.NewNamespaceClient(client.Options{HostPort: addr})
	require.NoError(t, err)
	defer nsc.Close()
	ns := "sa-test"
	err = nsc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	tc, err := client.Dial(client.Options{HostPort: addr, Namespace: ns})
	require.NoError(t, err)
	defer tc.Close()

	d := worker.Deps{Config: config.Config{TemporalNamespace: ns}, Temporal: tc}
	require.Eventually(t, func() bool { return worker.RegisterSearchAttributes(ctx, d) == nil }, 30*time.Second, 200*time.Millisecond)
	require.NoError(t, worker.RegisterSearchAttributes(ctx, d))
	got, err := tc.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	require.NoError(t, err)
	for _, name := range worker.SearchAttributes {
		require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, got.GetCustomAttributes()[name], name)
	}
}
