package domain

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Labels are key/value pairs a user puts on a schedule to select it by (team=billing). Their
// syntax and sizes are Kubernetes': a key is a name of at most 63 characters —
// alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric — with an
// optional DNS-subdomain prefix ("example.com/team", at most 253 characters); a value is
// empty or a name of at most 63 characters.
type Labels map[string]string

// Label limits.
const (
	// MaxLabels is the most labels one schedule carries.
	MaxLabels = 64
	// maxLabelName is the longest name part of a key, and the longest value.
	maxLabelName = 63
	// maxLabelPrefix is the longest prefix of a key.
	maxLabelPrefix = 253
)

var (
	labelName   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	labelPrefix = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// CheckLabels judges a schedule's labels. The error names the field relative to the labels
// object: the key ("team") whose key or value is wrong, "" for the labels as a whole.
func CheckLabels(l Labels) error {
	if len(l) > MaxLabels {
		return &FieldError{Msg: fmt.Sprintf("at most %d labels; got %d", MaxLabels, len(l))}
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad label in a fixed order, whatever the map's
	for _, k := range keys {
		if msg := checkLabelKey(k); msg != "" {
			return &FieldError{Field: k, Msg: msg}
		}
		if msg := checkLabelValue(l[k]); msg != "" {
			return &FieldError{Field: k, Msg: msg}
		}
	}
	return nil
}

func checkLabelKey(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		prefix, name = "", k
	}
	switch {
	case k == "":
		return "a label key must not be empty"
	case hasPrefix && (prefix == "" || len(prefix) > maxLabelPrefix || !labelPrefix.MatchString(prefix)):
		return fmt.Sprintf("the key's prefix %q must be a DNS subdomain (lowercase alphanumerics, '-' and '.', at most %d characters)", prefix, maxLabelPrefix)
	case len(name) > maxLabelName || !labelName.MatchString(name):
		return fmt.Sprintf("the key %q must be at most %d characters: alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric (optionally after a prefix and '/')", k, maxLabelName)
	}
	return ""
}

func checkLabelValue(v string) string {
	if v == "" {
		return ""
	}
	if len(v) > maxLabelName || !labelName.MatchString(v) {
		return fmt.Sprintf("the value %q must be empty or at most %d characters: alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric", v, maxLabelName)
	}
	return ""
}

// Requirement is one term of a selector: the label Key equals Value, or (NotEqual) does not —
// which a schedule without that label satisfies too, as in Kubernetes.
type Requirement struct {
	Key, Value string
	NotEqual   bool
}

// Selector selects schedules by their labels: every requirement holds (comma is AND).
type Selector []Requirement

// MaxSelector is the longest selector, in bytes.
const MaxSelector = 4096

// ParseSelector reads a selector: requirements separated by commas, each "key=value" (or
// "key==value") or "key!=value", keys and values as labels have them, spaces around them
// ignored ("team=billing, tier!=gold"). An empty string is the empty selector, which every
// schedule matches: callers that must not reach every schedule refuse it (Empty).
func ParseSelector(s string) (Selector, error) {
	if len(s) > MaxSelector {
		return nil, &FieldError{Msg: fmt.Sprintf("must be at most %d bytes; got %d", MaxSelector, len(s))}
	}
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var sel Selector
	for i, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		var r Requirement
		var found bool
		if r.Key, r.Value, found = strings.Cut(term, "!="); found {
			r.NotEqual = true
		} else if r.Key, r.Value, found = strings.Cut(term, "=="); !found {
			r.Key, r.Value, found = strings.Cut(term, "=")
		}
		if !found {
			return nil, &FieldError{Msg: fmt.Sprintf("requirement %d %q: want key=value or key!=value (requirements are separated by commas)", i+1, term)}
		}
		r.Key, r.Value = strings.TrimSpace(r.Key), strings.TrimSpace(r.Value)
		if msg := checkLabelKey(r.Key); msg != "" {
			return nil, &FieldError{Msg: fmt.Sprintf("requirement %d %q: %s", i+1, term, msg)}
		}
		if msg := checkLabelValue(r.Value); msg != "" {
			return nil, &FieldError{Msg: fmt.Sprintf("requirement %d %q: %s", i+1, term, msg)}
		}
		sel = append(sel, r)
	}
	return sel, nil
}

// Empty reports whether the selector has no requirement (it matches every schedule).
func (s Selector) Empty() bool { return len(s) == 0 }

// Matches reports whether labels satisfy every requirement.
func (s Selector) Matches(l Labels) bool {
	for _, r := range s {
		v, ok := l[r.Key]
		if r.NotEqual == (ok && v == r.Value) {
			return false
		}
	}
	return true
}

// String is the selector in its canonical form ("team=billing,tier!=gold").
func (s Selector) String() string {
	terms := make([]string, len(s))
	for i, r := range s {
		op := "="
		if r.NotEqual {
			op = "!="
		}
		terms[i] = r.Key + op + r.Value
	}
	return strings.Join(terms, ",")
}

// Containment is the selector as PostgreSQL's jsonb containment reads it: the object every
// equality makes together (labels @> match), and one object per inequality (NOT labels @>
// each). Two equalities of one key with different values contain nothing a schedule has, so
// they match none, as they should.
func (s Selector) Containment() (match json.RawMessage, exclude []json.RawMessage) {
	exclude = []json.RawMessage{} // never NULL: NOT (labels @> ANY(NULL)) would keep no row
	eq := map[string][]string{}
	for _, r := range s {
		if r.NotEqual {
			one, _ := json.Marshal(map[string]string{r.Key: r.Value})
			exclude = append(exclude, one)
			continue
		}
		eq[r.Key] = append(eq[r.Key], r.Value)
	}
	obj := map[string]string{}
	for k, vs := range eq {
		obj[k] = vs[0]
		for _, v := range vs[1:] {
			if v != vs[0] {
				// key=a,key=b: no schedule holds both. An array where a string is can never be
				// contained in an object of strings.
				bad, _ := json.Marshal(map[string]any{k: vs})
				return bad, exclude
			}
		}
	}
	match, _ = json.Marshal(obj)
	return match, exclude
}
