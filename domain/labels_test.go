package domain_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
)

func TestCheckLabelsFollowsKubernetesSyntaxAndNamesTheKey(t *testing.T) {
	require.NoError(t, domain.CheckLabels(domain.Labels{
		"team": "billing", "app.kubernetes.io/name": "api", "a": "", "x_y-z.1": "V.1-a_b", strings.Repeat("k", 63): strings.Repeat("v", 63),
	}))
	for key, value := range map[string]string{
		"":                              "v",
		"-lead":                         "v",
		"trail-":                        "v",
		"sp ace":                        "v",
		strings.Repeat("k", 64):         "v",
		"UPPER.example.com/name":        "v",
		"/name":                         "v",
		"prefix/":                       "v",
		"a/b/c":                         "v",
		"team":                          "-billing",
		"tier":                          strings.Repeat("v", 64),
		"zone":                          "eu west",
		strings.Repeat("p", 254) + "/n": "v",
	} {
		err := domain.CheckLabels(domain.Labels{"ok": "fine", key: value})
		var fe *domain.FieldError
		require.True(t, errors.As(err, &fe), "%q=%q: %v", key, value, err)
		require.Equal(t, key, fe.Field, "the error names the label's key")
	}
	many := domain.Labels{}
	for i := 0; i <= domain.MaxLabels; i++ {
		many[fmt.Sprintf("k%d", i)] = ""
	}
	var fe *domain.FieldError
	require.True(t, errors.As(domain.CheckLabels(many), &fe))
	require.Empty(t, fe.Field)
}

func TestSelectorsMatchEqualityInequalityAndAnd(t *testing.T) {
	billingGold := domain.Labels{"team": "billing", "tier": "gold"}
	billing := domain.Labels{"team": "billing"}
	none := domain.Labels{}
	for _, c := range []struct {
		selector string
		matches  []domain.Labels
		misses   []domain.Labels
		canon    string
	}{
		{"team=billing", []domain.Labels{billingGold, billing}, []domain.Labels{none}, "team=billing"},
		{" team == billing ", []domain.Labels{billing}, []domain.Labels{none}, "team=billing"},
		{"team=billing,tier!=gold", []domain.Labels{billing}, []domain.Labels{billingGold, none}, "team=billing,tier!=gold"},
		{"tier!=gold", []domain.Labels{billing, none}, []domain.Labels{billingGold}, "tier!=gold"},
		{"team=billing,team=ops", nil, []domain.Labels{billing, billingGold}, "team=billing,team=ops"},
		{"team=", []domain.Labels{{"team": ""}}, []domain.Labels{billing, none}, "team="},
	} {
		sel, err := domain.ParseSelector(c.selector)
		require.NoError(t, err, c.selector)
		require.Equal(t, c.canon, sel.String())
		for _, l := range c.matches {
			require.True(t, sel.Matches(l), "%q matches %v", c.selector, l)
		}
		for _, l := range c.misses {
			require.False(t, sel.Matches(l), "%q misses %v", c.selector, l)
		}
	}
	empty, err := domain.ParseSelector("  ")
	require.NoError(t, err)
	require.True(t, empty.Empty())
	require.True(t, empty.Matches(billing))
	for _, bad := range []string{"team", "team=a=b", "=x", "te am=x", ",team=x", "team=x,", "team=bad value", "!team", strings.Repeat("a", domain.MaxSelector+1)} {
		_, err := domain.ParseSelector(bad)
		var fe *domain.FieldError
		require.True(t, errors.As(err, &fe), "%q: %v", bad, err)
	}
}

func TestCheckConcurrencyHoldsTheCapToAllowAllWorkflows(t *testing.T) {
	two, zero := 2, 0
	wf := domain.ActionWorkflow
	whenFull, err := domain.CheckConcurrency(&two, "", domain.OverlapAllowAll, wf)
	require.NoError(t, err)
	require.Equal(t, domain.WhenFullBuffer, whenFull, "buffer by default")
	whenFull, err = domain.CheckConcurrency(&two, domain.WhenFullSkip, domain.OverlapAllowAll, wf)
	require.NoError(t, err)
	require.Equal(t, domain.WhenFullSkip, whenFull)
	whenFull, err = domain.CheckConcurrency(nil, "", domain.OverlapSkip, domain.ActionEvent)
	require.NoError(t, err)
	require.Empty(t, whenFull, "no cap, nothing to keep")
	big := domain.MaxConcurrentLimit + 1
	for _, c := range []struct {
		max      *int
		whenFull domain.WhenFull
		overlap  domain.Overlap
		action   domain.ActionKind
		field    string
	}{
		{&zero, "", domain.OverlapAllowAll, wf, "max_concurrent"},
		{&big, "", domain.OverlapAllowAll, wf, "max_concurrent"},
		{&two, "", domain.OverlapBufferAll, wf, "max_concurrent"},
		{&two, "", domain.OverlapAllowAll, domain.ActionEvent, "max_concurrent"},
		{&two, "later", domain.OverlapAllowAll, wf, "overlap_when_full"},
		{nil, domain.WhenFullSkip, domain.OverlapAllowAll, wf, "overlap_when_full"},
	} {
		_, err := domain.CheckConcurrency(c.max, c.whenFull, c.overlap, c.action)
		var fe *domain.FieldError
		require.True(t, errors.As(err, &fe), "%+v", c)
		require.Equal(t, c.field, fe.Field)
	}
}
