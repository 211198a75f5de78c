package agentsim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// HistoryWriter appends a fleet's operations to a file, one JSON object a line, for
// Options.Record. Each line is written out as it comes, so a simulator killed mid-run
// leaves every operation it saw answered.
type HistoryWriter struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

// CreateHistory opens path for appending.
func CreateHistory(path string) (*HistoryWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // #nosec G304 G302 -- the simulator's history file, named by its operator and read like a log
	if err != nil {
		return nil, fmt.Errorf("agentsim: history: %w", err)
	}
	return &HistoryWriter{f: f}, nil
}

// Record writes e; the first error is kept for Close.
func (h *HistoryWriter) Record(e HistoryEvent) {
	b, err := json.Marshal(e)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		_, err = h.f.Write(append(b, '\n'))
	}
	if err != nil && h.err == nil {
		h.err = err
	}
}

// Close closes the file and answers the first error met.
func (h *HistoryWriter) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.f.Close(); err != nil && h.err == nil {
		h.err = err
	}
	return h.err
}

// ReadHistory reads a file HistoryWriter wrote. A last line cut short (the simulator was
// killed while writing it) is left out.
func ReadHistory(path string) ([]HistoryEvent, error) {
	f, err := os.Open(path) // #nosec G304 -- the simulator's history file, named by its operator
	if err != nil {
		return nil, fmt.Errorf("agentsim: history: %w", err)
	}
	defer f.Close()
	var out []HistoryEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var e HistoryEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("agentsim: read history %s: %w", path, err)
	}
	return out, nil
}
