package domain

// TokenRole is what an API token may do (api_tokens.role); docs/operations.md lists the
// routes each role reaches.
type TokenRole string

// Token roles, from most to least trusted; an agent token is bound to one PC and works
// only that PC's commands.
const (
	RoleAdmin    TokenRole = "admin"
	RoleOperator TokenRole = "operator"
	RoleViewer   TokenRole = "viewer"
	RoleAgent    TokenRole = "agent"
)

// Valid reports whether r is one of the four roles.
func (r TokenRole) Valid() bool {
	switch r {
	case RoleAdmin, RoleOperator, RoleViewer, RoleAgent:
		return true
	}
	return false
}
