package config

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tickgate/tickgate/domain"
)

// readBounds reads the settings that bound what clients and tenants can cost: the API
// server's timeouts, the failed-authentication limit and the proxies it trusts, and the
// timeouts and probe DSNs of SQL on target databases (docs/security.md).
func (c *Config) readBounds() error {
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{
		{"TICKGATE_API_READ_TIMEOUT", &c.APIReadTimeout},
		{"TICKGATE_API_WRITE_TIMEOUT", &c.APIWriteTimeout},
		{"TICKGATE_API_IDLE_TIMEOUT", &c.APIIdleTimeout},
	} {
		if err := positiveDuration(d.name, os.Getenv(d.name), d.dst); err != nil {
			return err
		}
	}
	if v := os.Getenv("TICKGATE_API_AUTH_FAILURES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n == 0 {
			return fmt.Errorf("TICKGATE_API_AUTH_FAILURES: want a positive integer (failures a minute per client address), or -1 for no limit, got %q", v)
		}
		c.APIAuthFailures = n
	}
	if v := os.Getenv("TICKGATE_API_TRUSTED_PROXIES"); v != "" {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			p, err := parsePrefix(part)
			if err != nil {
				return fmt.Errorf("TICKGATE_API_TRUSTED_PROXIES: want addresses or CIDR prefixes, comma-separated: %q: %w", part, err)
			}
			c.APITrustedProxies = append(c.APITrustedProxies, p)
		}
	}
	c.SQLStatementTimeout, c.SQLLockTimeout = domain.DefaultSQLStatementTimeout, domain.DefaultSQLLockTimeout
	if err := positiveDuration("TICKGATE_SQL_STATEMENT_TIMEOUT", os.Getenv("TICKGATE_SQL_STATEMENT_TIMEOUT"), &c.SQLStatementTimeout); err != nil {
		return err
	}
	if err := positiveDuration("TICKGATE_SQL_LOCK_TIMEOUT", os.Getenv("TICKGATE_SQL_LOCK_TIMEOUT"), &c.SQLLockTimeout); err != nil {
		return err
	}
	if v := os.Getenv("TICKGATE_SQL_PROBE_TARGETS"); v != "" {
		if err := json.Unmarshal([]byte(v), &c.SQLProbeTargets); err != nil {
			return fmt.Errorf("TICKGATE_SQL_PROBE_TARGETS: want a JSON object {\"database\": \"read-only dsn\"}: %w", err)
		}
	}
	return nil
}

// positiveDuration sets *dst from v when v is given.
func positiveDuration(name, v string, dst *time.Duration) error {
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("%s: want a positive duration such as 30s, got %q", name, v)
	}
	*dst = d
	return nil
}

// parsePrefix reads an address (a prefix of its full length) or a CIDR prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}
