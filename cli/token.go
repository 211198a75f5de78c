package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate token …` (docs/security.md): API tokens, and the bootstrap of the first admin
// token straight in the database (--database-url).

var (
	tokenCols = []col{{"ID", "id"}, {"ROLE", "role"}, {"PC", "pc"}, {"PREFIX", "prefix"}, {"NOTE", "note"}, {"CREATED", "created_at"}, {"REVOKED", "revoked_at"}}
	tokenRec  = []col{{"id", "id"}, {"role", "role"}, {"pc", "pc"}, {"note", "note"}, {"token", "token"}}
	roles     = []string{"admin", "deployer", "operator", "viewer", "agent"}
)

func tokenCmd(a *app) *cobra.Command {
	var lf *listFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secret)",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				return body(a.api.ListTokensWithResponse(a.ctx, &client.ListTokensParams{Cursor: cursor, Limit: &limit}))
			}, tokenCols)
		},
	}
	lf = addListFlags(list)
	return group("token", "Manage API tokens: list, create, revoke",
		list, tokenCreateCmd(a),
		simpleCmd("revoke ID", "Revoke a token", "ID", func(args []string) ([]byte, error) {
			id, err := idArg(args[0])
			if err != nil {
				return nil, err
			}
			return body(a.api.RevokeTokenWithResponse(a.ctx, id))
		}, a, tokenCols))
}

func tokenCreateCmd(a *app) *cobra.Command {
	var role, pc, note, dbURL string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "create --role admin|deployer|operator|viewer|agent [--pc PC] [--note TEXT] [--database-url URL] [-q]",
		Short: "Create a token, shown once (with --database-url: straight in the database, the first admin's)",
		Example: `  tickgate token create --role admin --database-url "$DATABASE_URL" -q   # the first admin token
  TOKEN=$(tickgate token create --role viewer --note dashboards -q)`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			direct := dbURL
			if direct == "" && a.token == "" {
				direct = a.env.Getenv("DATABASE_URL")
			}
			switch role {
			case "admin", "deployer", "operator", "viewer", "agent":
			default:
				return usagef("--role must be admin, deployer, operator, viewer or agent, got %q", role)
			}
			if direct != "" {
				if a.env.CreateTokenInDB == nil {
					return usagef("creating a token in the database is not available here")
				}
				id, token, err := a.env.CreateTokenInDB(a.ctx, direct, role, pc, note)
				if err != nil {
					return err
				}
				if quiet {
					_, err := fmt.Fprintln(a.env.Stdout, token)
					return err
				}
				b, _ := json.Marshal(map[string]any{"id": id, "role": role, "pc": pc, "note": note, "token": token})
				return a.show(b, tokenRec)
			}
			req := client.CreateTokenRequest{Role: client.CreateTokenRequestRole(role)}
			if pc != "" {
				req.Pc = &pc
			}
			if note != "" {
				req.Note = &note
			}
			r, err := a.api.CreateTokenWithResponse(a.ctx, req)
			if err != nil {
				return err
			}
			if quiet {
				if r.JSON201 == nil || r.JSON201.Token == nil {
					return fmt.Errorf("the answer holds no token: %s", r.Body)
				}
				_, err := fmt.Fprintln(a.env.Stdout, *r.JSON201.Token)
				return err
			}
			return a.show(r.Body, tokenRec)
		},
	}
	f := cmd.Flags()
	f.StringVar(&role, "role", "", "admin, deployer (runs code on targets: sql and http tasks), operator, viewer or agent")
	f.StringVar(&pc, "pc", "", "the PC an agent token is bound to")
	f.StringVar(&note, "note", "", "what the token is for")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only the token (for TOKEN=$(tickgate token create … -q))")
	f.StringVar(&dbURL, "database-url", "", "create the token straight in this database (DATABASE_URL when no API token is set): the way to make the first admin token")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions(roles, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
