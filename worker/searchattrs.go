package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/tickgate/tickgate/workflows"
)

// SearchAttributes are the custom search attributes every tickgate workflow sets.
var SearchAttributes = []string{
	workflows.KindKey.GetName(), workflows.ScheduleKey.GetName(), workflows.RolloutKey.GetName(),
	workflows.PCKey.GetName(), workflows.TaskKey.GetName(),
}

// RegisterSearchAttributes adds tickgate's search attributes (all Keyword) to the worker's
// namespace on whatever Temporal server it talks to; ones that exist already are fine.
func RegisterSearchAttributes(ctx context.Context, d Deps) error {
	ns := d.Config.TemporalNamespace
	if ns == "" {
		ns = "default"
	}
	missing := map[string]enumspb.IndexedValueType{}
	have, err := d.Temporal.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	for _, name := range SearchAttributes {
		if err == nil {
			if _, ok := have.GetCustomAttributes()[name]; ok {
				continue
			}
		}
		missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = d.Temporal.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: ns, SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) && !strings.Contains(strings.ToLower(err.Error()), "already") {
		return fmt.Errorf("register search attributes in namespace %q: %w", ns, err)
	}
	return nil
}

func init() {
	// First, so the singletons after it start with their search attributes in place.
	singletons = append([]func(context.Context, Deps) error{RegisterSearchAttributes}, singletons...)
}
