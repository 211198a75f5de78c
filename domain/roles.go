package domain

// TokenRole is what an API token may do (api_tokens.role); docs/operations.md lists the
// routes each role reaches, and docs/security.md what each actor can reach.
type TokenRole string

// Token roles, from most to least trusted; an agent token is bound to one PC and works
// only that PC's commands. A deployer is an operator that may also run code on the
// rollouts' target databases and endpoints (RunsCodeOnTargets).
const (
	RoleAdmin    TokenRole = "admin"
	RoleDeployer TokenRole = "deployer"
	RoleOperator TokenRole = "operator"
	RoleViewer   TokenRole = "viewer"
	RoleAgent    TokenRole = "agent"
)

// Roles lists every role, from most to least trusted.
var Roles = []TokenRole{RoleAdmin, RoleDeployer, RoleOperator, RoleViewer, RoleAgent}

// Valid reports whether r is one of the roles.
func (r TokenRole) Valid() bool {
	switch r {
	case RoleAdmin, RoleDeployer, RoleOperator, RoleViewer, RoleAgent:
		return true
	}
	return false
}

// RunsCodeOnTargets reports whether r may create what runs code on a rollout's targets: a
// task with the sql or http executor, or a wave's SQL health probe (Executor.RunsCode).
func (r TokenRole) RunsCodeOnTargets() bool {
	return r == RoleAdmin || r == RoleDeployer
}
