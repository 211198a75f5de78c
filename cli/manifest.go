package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Schedules as code (docs/gitops.md): a manifest document is the body of POST /schedules
// (or of POST /calendars) plus its kind,
//
//	kind: Schedule
//	name: nightly-report
//	labels: {team: billing}
//	spec: {cron: "0 3 * * *", timezone: Europe/Berlin}
//	action: {kind: event, topic: reports, type: report.due}
//	policies: {overlap: skip, catchup_window: 6h}
//
// in YAML or JSON files, several documents to a file ("---" between YAML documents, JSON
// values one after the other or in an array).

// Manifest kinds.
const (
	KindSchedule = "Schedule"
	KindCalendar = "Calendar"
)

// SetLabel is the label apply puts on the schedules of a set: `tickgate.dev/set: NAME`.
const SetLabel = "tickgate.dev/set"

// manifest is one document.
type manifest struct {
	Kind   string
	Name   string
	Body   map[string]any // the document without kind: the request body
	Source string         // file and document number, for messages
}

// readManifests reads every document of the files and directories given (a directory's
// *.yaml, *.yml and *.json files, recursively, in name order).
func readManifests(paths []string, stdin io.Reader) ([]manifest, error) {
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, &ManifestError{err}
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					found = append(found, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, &ManifestError{err}
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	var out []manifest
	seen := map[string]string{}
	for _, f := range files {
		var b []byte
		var err error
		if f == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(f) // #nosec G304 -- a manifest the user names
		}
		if err != nil {
			return nil, &ManifestError{err}
		}
		docs, err := decodeDocuments(f, b)
		if err != nil {
			return nil, &ManifestError{fmt.Errorf("%s: %w", f, err)}
		}
		for i, doc := range docs {
			m, err := toManifest(doc)
			src := fmt.Sprintf("%s#%d", f, i+1)
			if err != nil {
				return nil, &ManifestError{fmt.Errorf("%s: %w", src, err)}
			}
			m.Source = src
			key := m.Kind + "/" + m.Name
			if prev, dup := seen[key]; dup {
				return nil, &ManifestError{fmt.Errorf("%s: %s %q is also %s", src, m.Kind, m.Name, prev)}
			}
			seen[key] = src
			out = append(out, m)
		}
	}
	return out, nil
}

// decodeDocuments reads a file's documents: JSON values (one after the other, or an array
// of them) in a .json file, YAML documents otherwise. Empty documents are skipped.
func decodeDocuments(name string, b []byte) ([]any, error) {
	var docs []any
	if strings.EqualFold(filepath.Ext(name), ".json") {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			if list, ok := v.([]any); ok {
				docs = append(docs, list...)
			} else {
				docs = append(docs, v)
			}
		}
		return docs, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if v != nil {
			docs = append(docs, plainYAML(v))
		}
	}
	return docs, nil
}

// plainYAML makes a decoded YAML value JSON-ready: times as RFC 3339 text (an unquoted
// date-time is a timestamp to YAML), keys as strings.
func plainYAML(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case map[string]any:
		for k, e := range x {
			x[k] = plainYAML(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = plainYAML(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = plainYAML(e)
		}
	}
	return v
}

// toManifest reads one document: its kind and name, the rest is the request body.
func toManifest(doc any) (manifest, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return manifest{}, fmt.Errorf("a document is an object with kind and name, got %T", doc)
	}
	kind, _ := m["kind"].(string)
	if kind != KindSchedule && kind != KindCalendar {
		return manifest{}, fmt.Errorf("kind must be %s or %s, got %v", KindSchedule, KindCalendar, m["kind"])
	}
	name, _ := m["name"].(string)
	if name == "" {
		return manifest{}, errors.New("name is required")
	}
	body := make(map[string]any, len(m))
	for k, v := range m {
		if k != "kind" {
			body[k] = v
		}
	}
	return manifest{Kind: kind, Name: name, Body: body}, nil
}

// ManifestError is a manifest file apply cannot read or make sense of (exit 6, as the API's
// refusal of an invalid request).
type ManifestError struct{ err error }

func (e *ManifestError) Error() string { return e.err.Error() }
func (e *ManifestError) Unwrap() error { return e.err }
