package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The signature of an http action's request (docs/schedules.md "Verifying a request"):
//
//	Tickgate-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<unix seconds>.<body>">
//
// keyed with the schedule's signing secret, as its create answer (or a rotation) showed it.
// The timestamp is the attempt's own, so a receiver can refuse old replays; the body is the
// exact bytes sent (empty for a request without one).

// SigningSecretPrefix begins every signing secret, so one is recognised where it leaks.
const SigningSecretPrefix = "tgs_"

// SignatureTolerance is how old a signature's timestamp VerifyHTTPSignature accepts by
// default.
const SignatureTolerance = 5 * time.Minute

// HTTPSignature is the Tickgate-Signature header of a request sent at t with body.
func HTTPSignature(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + signatureOf(secret, ts, body)
}

func signatureOf(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// ErrBadSignature is wrapped by every verification failure.
var ErrBadSignature = errors.New("bad Tickgate-Signature")

// VerifyHTTPSignature checks a Tickgate-Signature header against the body received, with
// the schedule's secret: the signature must match and its timestamp be within tolerance of
// now (0: SignatureTolerance). Several v1 values (sent while a secret is being rotated on
// the receiver's side) pass if one matches.
func VerifyHTTPSignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = SignatureTolerance
	}
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: want t=<unix seconds>,v1=<hex>", ErrBadSignature)
	}
	if age := now.Sub(time.Unix(sec, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("%w: its timestamp is %s away from now (tolerance %s)", ErrBadSignature, age.Round(time.Second), tolerance)
	}
	want := signatureOf(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("%w: no v1 signature matches the body", ErrBadSignature)
}
