// Package traceview is make dev's trace viewer: an OTLP/HTTP receiver that keeps the most
// recent traces in memory and a web page that lists them and draws each as a waterfall of
// its spans, with their attributes, events and links. It exists because no viewer with a
// working web UI can be built from the registries this project may use: Jaeger's Go module
// ships only a placeholder page (its UI is built from a JavaScript repository), and
// otel-desktop-viewer is not served by the module proxy. Any OTLP backend works in its
// place: tickgate only speaks OTLP (docs/tracing.md).
package traceview

import (
	"compress/gzip"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

//go:embed ui
var ui embed.FS

// Span is one received span, as the page reads it.
type Span struct {
	TraceID    string            `json:"trace_id"`
	SpanID     string            `json:"span_id"`
	ParentID   string            `json:"parent_id,omitempty"`
	Name       string            `json:"name"`
	Kind       string            `json:"kind"`
	Service    string            `json:"service"`
	Start      int64             `json:"start_ns"`
	End        int64             `json:"end_ns"`
	Status     string            `json:"status,omitempty"`
	StatusMsg  string            `json:"status_message,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Resource   map[string]string `json:"resource,omitempty"`
	Events     []Event           `json:"events,omitempty"`
	Links      []Link            `json:"links,omitempty"`
	Scope      string            `json:"scope,omitempty"`
}

// Event is a span event.
type Event struct {
	Time       int64             `json:"time_ns"`
	Name       string            `json:"name"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Link is a span link.
type Link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// Summary is a trace in the list.
type Summary struct {
	TraceID  string   `json:"trace_id"`
	Root     string   `json:"root"`
	Services []string `json:"services"`
	Spans    int      `json:"spans"`
	Start    int64    `json:"start_ns"`
	End      int64    `json:"end_ns"`
	Errors   int      `json:"errors"`
	Received int64    `json:"received_ns"`
}

// Store keeps the newest MaxTraces traces.
type Store struct {
	MaxTraces int

	mu     sync.Mutex
	traces map[string][]Span
	order  []string // trace ids, oldest first by first arrival
	seen   map[string]int64
}

// NewStore keeps up to max traces.
func NewStore(max int) *Store {
	return &Store{MaxTraces: max, traces: map[string][]Span{}, seen: map[string]int64{}}
}

// Add keeps spans, forgetting the oldest traces beyond MaxTraces.
func (s *Store) Add(spans []Span) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixNano()
	for _, sp := range spans {
		if _, ok := s.traces[sp.TraceID]; !ok {
			s.order = append(s.order, sp.TraceID)
		}
		s.traces[sp.TraceID] = append(s.traces[sp.TraceID], sp)
		s.seen[sp.TraceID] = now
	}
	for len(s.order) > s.MaxTraces {
		old := s.order[0]
		s.order = s.order[1:]
		delete(s.traces, old)
		delete(s.seen, old)
	}
}

// Trace is a trace's spans, by start time.
func (s *Store) Trace(id string) []Span {
	s.mu.Lock()
	out := append([]Span(nil), s.traces[id]...)
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// List summarises the traces whose spans' names, services or attribute values hold q
// (all when q is empty), newest first, at most limit.
func (s *Store) List(q string, limit int) []Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	q = strings.ToLower(q)
	var out []Summary
	for i := len(s.order) - 1; i >= 0 && len(out) < limit; i-- {
		id := s.order[i]
		spans := s.traces[id]
		if q != "" && !matches(spans, q) {
			continue
		}
		out = append(out, summarise(id, spans, s.seen[id]))
	}
	return out
}

func matches(spans []Span, q string) bool {
	for _, sp := range spans {
		if strings.Contains(strings.ToLower(sp.Name), q) || strings.Contains(strings.ToLower(sp.Service), q) || strings.Contains(sp.TraceID, q) {
			return true
		}
		for _, v := range sp.Attributes {
			if strings.Contains(strings.ToLower(v), q) {
				return true
			}
		}
	}
	return false
}

func summarise(id string, spans []Span, received int64) Summary {
	sum := Summary{TraceID: id, Spans: len(spans), Received: received}
	ids := map[string]bool{}
	for _, sp := range spans {
		ids[sp.SpanID] = true
	}
	services := map[string]bool{}
	for _, sp := range spans {
		if sum.Start == 0 || sp.Start < sum.Start {
			sum.Start = sp.Start
		}
		sum.End = max(sum.End, sp.End)
		services[sp.Service] = true
		if sp.Status == "error" {
			sum.Errors++
		}
		// The root: a span without parent, else the earliest whose parent was not received.
		if sp.ParentID == "" || (!ids[sp.ParentID] && sum.Root == "") {
			if sum.Root == "" || sp.ParentID == "" {
				sum.Root = sp.Name
			}
		}
	}
	for s := range services {
		sum.Services = append(sum.Services, s)
	}
	sort.Strings(sum.Services)
	return sum
}

// Handler serves the page, its JSON and the OTLP/HTTP receiver (POST /v1/traces, protobuf
// or JSON, gzip or not).
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	page, _ := fs.ReadFile(ui, "ui/index.html")
	serve := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}
	mux.HandleFunc("GET /{$}", serve)
	mux.HandleFunc("GET /trace/{id}", serve)
	mux.HandleFunc("GET /api/traces", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.List(r.URL.Query().Get("q"), 200))
	})
	mux.HandleFunc("GET /api/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		spans := s.Trace(r.PathValue("id"))
		if len(spans) == 0 {
			http.Error(w, "no such trace (yet)", http.StatusNotFound)
			return
		}
		writeJSON(w, spans)
	})
	mux.HandleFunc("POST /v1/traces", s.receive)
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// receive takes an OTLP/HTTP export.
func (s *Store) receive(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = http.MaxBytesReader(w, r.Body, 64<<20)
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, "bad gzip: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer gz.Close()
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	jsonBody := strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	if jsonBody {
		err = protojson.Unmarshal(raw, &req)
	} else {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, "bad OTLP export: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.Add(Decode(&req))
	resp := &coltracepb.ExportTraceServiceResponse{}
	if jsonBody {
		b, _ := protojson.Marshal(resp)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return
	}
	b, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// Decode flattens an export into spans.
func Decode(req *coltracepb.ExportTraceServiceRequest) []Span {
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		service := res["service.name"]
		if role := res["tickgate.role"]; role != "" {
			service += " (" + role + ")"
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s := Span{
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					ParentID: hex.EncodeToString(sp.GetParentSpanId()), Name: sp.GetName(), Service: service,
					Kind:  strings.ToLower(strings.TrimPrefix(sp.GetKind().String(), "SPAN_KIND_")),
					Start: int64(sp.GetStartTimeUnixNano()), End: int64(sp.GetEndTimeUnixNano()), // #nosec G115 -- Unix nanoseconds fit an int64 until 2262
					Attributes: attrs(sp.GetAttributes()), Resource: res, Scope: ss.GetScope().GetName(),
				}
				switch sp.GetStatus().GetCode() {
				case tracepb.Status_STATUS_CODE_ERROR:
					s.Status = "error"
				case tracepb.Status_STATUS_CODE_OK:
					s.Status = "ok"
				}
				s.StatusMsg = sp.GetStatus().GetMessage()
				for _, e := range sp.GetEvents() {
					s.Events = append(s.Events, Event{Time: int64(e.GetTimeUnixNano()), Name: e.GetName(), Attributes: attrs(e.GetAttributes())}) // #nosec G115 -- Unix nanoseconds fit an int64 until 2262
				}
				for _, l := range sp.GetLinks() {
					s.Links = append(s.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, value(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	}
	return ""
}
