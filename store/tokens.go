package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Token is an api_tokens row (its hash, never the token itself).
type Token = dbgen.ApiToken

// TokenPrefix starts every API token, so a leaked one is easy to recognise (and to scan for).
const TokenPrefix = "tg_"

// HashToken is what the database keeps of a token.
func HashToken(token string) []byte {
	sum := tokenHash(token)
	return sum[:]
}

func tokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// validTokenShape reports whether token could be one of ours (anything else is unknown
// without asking the database).
func validTokenShape(token string) bool {
	return strings.HasPrefix(token, TokenPrefix) && len(token) <= 200
}

// NewToken is what CreateToken needs; PC is required for (and only for) the agent role.
type NewToken struct {
	Role domain.TokenRole
	PC   string
	Note string
}

// CreateToken makes a random token, stores its hash and returns the row and the token,
// which is never stored and cannot be read back.
func (s *Store) CreateToken(ctx context.Context, n NewToken) (Token, string, error) {
	if !n.Role.Valid() {
		return Token{}, "", fmt.Errorf("create token: unknown role %q (admin, deployer, operator, viewer, agent)", n.Role)
	}
	if (n.Role == domain.RoleAgent) != (n.PC != "") {
		return Token{}, "", errors.New("create token: an agent token needs a pc, and only an agent token may have one")
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return Token{}, "", fmt.Errorf("create token: random: %w", err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	var pc *string
	if n.PC != "" {
		pc = &n.PC
	}
	row, err := s.Q.InsertToken(ctx, dbgen.InsertTokenParams{
		Role: n.Role, Pc: pc, Note: n.Note, TokenHash: HashToken(token), Prefix: token[:len(TokenPrefix)+6],
	})
	if err != nil {
		return Token{}, "", fmt.Errorf("create token: %w", mapErr(err))
	}
	return row, token, nil
}

// Authenticate returns the active (not revoked) token row for token; anything else is
// ErrNotFound.
func (s *Store) Authenticate(ctx context.Context, token string) (Token, error) {
	if !validTokenShape(token) {
		return Token{}, ErrNotFound
	}
	row, err := s.Q.GetActiveTokenByHash(ctx, HashToken(token))
	if err != nil {
		return Token{}, fmt.Errorf("authenticate: %w", mapErr(err))
	}
	return row, nil
}

// ListTokens lists tokens (revoked ones too) by id after afterID.
func (s *Store) ListTokens(ctx context.Context, afterID int64, limit int) ([]Token, error) {
	rows, err := s.Q.ListTokens(ctx, dbgen.ListTokensParams{AfterID: afterID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", mapErr(err))
	}
	return rows, nil
}

// RevokeToken revokes a token (revoking twice keeps the first time); unknown is ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, id int64) (Token, error) {
	row, err := s.Q.RevokeToken(ctx, id)
	if err != nil {
		return Token{}, fmt.Errorf("revoke token %d: %w", id, mapErr(err))
	}
	return row, nil
}

// DeviceExecutionPC names the PC an execution runs on (ErrNotFound when there is no such row).
func (s *Store) DeviceExecutionPC(ctx context.Context, deviceExecutionID int64) (string, error) {
	name, err := s.Q.DeviceExecutionPCName(ctx, deviceExecutionID)
	if err != nil {
		return "", fmt.Errorf("execution %d: %w", deviceExecutionID, mapErr(err))
	}
	return name, nil
}

// IdempotencyKey names one remembered request: a client's key, scoped to its token and to
// the method and path it was sent to.
type IdempotencyKey struct {
	TokenID int64
	Key     string
	Method  string
	Path    string
}

// StoredResponse is the first answer to an idempotent request: a rendered response, or
// (an agent's result, recorded with its key in one statement) Answer, the data the handler
// renders the answer from.
type StoredResponse struct {
	Status      int
	ContentType string
	Body        []byte
	Answer      json.RawMessage
}

// ErrInFlight means a request with the same idempotency key is still being processed.
var ErrInFlight = errors.New("a request with this Idempotency-Key is still in progress")

// ErrKeyReused means an idempotency key came back with a different request body.
var ErrKeyReused = errors.New("Idempotency-Key was already used with a different request")

// BeginIdempotent claims k for a request whose body hashes to requestHash. It returns
// (nil, nil) when the caller owns the key and must run the request and then call
// FinishIdempotent or ForgetIdempotent; the stored response when the request was already
// answered; ErrInFlight or ErrKeyReused otherwise.
func (s *Store) BeginIdempotent(ctx context.Context, k IdempotencyKey, requestHash []byte) (*StoredResponse, error) {
	_, err := s.Q.ClaimIdempotencyKey(ctx, dbgen.ClaimIdempotencyKeyParams{
		TokenID: k.TokenID, Key: k.Key, Method: k.Method, Path: k.Path, RequestHash: requestHash,
	})
	if err == nil {
		return nil, nil
	}
	if err = mapErr(err); !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("claim idempotency key: %w", err)
	}
	row, err := s.Q.GetIdempotencyKey(ctx, dbgen.GetIdempotencyKeyParams{TokenID: k.TokenID, Key: k.Key, Method: k.Method, Path: k.Path})
	if err != nil {
		// Forgotten between our insert and read: the client may simply retry.
		if errors.Is(mapErr(err), ErrNotFound) {
			return nil, ErrInFlight
		}
		return nil, fmt.Errorf("read idempotency key: %w", mapErr(err))
	}
	if string(row.RequestHash) != string(requestHash) {
		return nil, ErrKeyReused
	}
	if row.Status == 0 {
		return nil, ErrInFlight
	}
	return &StoredResponse{Status: int(row.Status), ContentType: row.ContentType, Body: row.Body, Answer: row.Answer}, nil
}

// FinishIdempotent stores the response of a claimed key.
func (s *Store) FinishIdempotent(ctx context.Context, k IdempotencyKey, r StoredResponse) error {
	err := s.Q.FinishIdempotencyKey(ctx, dbgen.FinishIdempotencyKeyParams{
		Status: int4(r.Status), ContentType: r.ContentType, Body: r.Body,
		TokenID: k.TokenID, Key: k.Key, Method: k.Method, Path: k.Path,
	})
	if err != nil {
		return fmt.Errorf("store idempotent response: %w", mapErr(err))
	}
	return nil
}

// ForgetIdempotent forgets a claimed key whose request failed in a way worth retrying.
func (s *Store) ForgetIdempotent(ctx context.Context, k IdempotencyKey) error {
	err := s.Q.ForgetIdempotencyKey(ctx, dbgen.ForgetIdempotencyKeyParams{TokenID: k.TokenID, Key: k.Key, Method: k.Method, Path: k.Path})
	if err != nil {
		return fmt.Errorf("forget idempotency key: %w", mapErr(err))
	}
	return nil
}

// PruneIdempotencyKeys deletes remembered responses older than before.
func (s *Store) PruneIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.Q.DeleteIdempotencyKeysBefore(ctx, before)
	if err != nil {
		return 0, fmt.Errorf("prune idempotency keys: %w", mapErr(err))
	}
	return n, nil
}
