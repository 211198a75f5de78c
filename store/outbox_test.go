package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// TestOutboxHasNoPublishedMark: the outbox is a pull feed read by each consumer's own cursor
// (GET /events?after=), so a row carries no "published" mark that nothing would write.
func TestOutboxHasNoPublishedMark(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	var cols []string
	rows, err := st.Pool.Query(context.Background(),
		`SELECT column_name FROM information_schema.columns WHERE table_name = 'outbox_messages' ORDER BY ordinal_position`)
	require.NoError(t, err)
	for rows.Next() {
		var c string
		require.NoError(t, rows.Scan(&c))
		cols = append(cols, c)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"id", "event_id", "topic", "tx_id", "created_at", "visible_at"}, cols)
}
