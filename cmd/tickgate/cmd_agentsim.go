package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tickgate/tickgate/internal/dev/agentsim"
	"github.com/tickgate/tickgate/internal/dev/devstack"
)

func init() {
	register("agent-sim", "simulate PC agents: claim device commands, answer after a latency with failure / no-answer rates", runAgentSim)
}

func runAgentSim(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agent-sim", flag.ContinueOnError)
	defaultServer := os.Getenv("TICKGATE_SERVER")
	if defaultServer == "" {
		defaultServer = "http://127.0.0.1:8080"
	}
	server := fs.String("server", defaultServer, "tickgate API address (default $TICKGATE_SERVER, else http://127.0.0.1:8080)")
	pcs := fs.String("pcs", "", "comma-separated PC names to run agents for (default: every PC the API lists)")
	max := fs.Int("max", 20, "commands asked for per claim")
	latency := fs.Duration("latency", 200*time.Millisecond, "how long a device takes to answer")
	jitter := fs.Duration("jitter", 0, "extra random latency, up to this much")
	failRate := fs.Float64("fail-rate", 0, "fraction of attempts reported failed (retryable)")
	fatalRate := fs.Float64("fatal-rate", 0, "fraction of attempts reported failed and not retryable")
	noAnswer := fs.Float64("no-answer-rate", 0, "fraction of attempts never answered (they time out)")
	ack := fs.Bool("ack", true, "ack each command before its result")
	every := fs.Duration("report", 5*time.Second, "how often to print the counters (0: never)")
	wait := fs.Duration("wait", 20*time.Second, "how long a claim long-polls for work")
	legacy := fs.Bool("legacy", false, "speak the protocol as an older agent does: claims do not wait, results do not ask for the next command")
	history := fs.String("history", "", "append each claim, ack and result, with when it was asked and answered, to this file (JSON lines; the chaos run's linearizability check reads it)")
	token := fs.String("token", os.Getenv("TICKGATE_TOKEN"), "API bearer token (default $TICKGATE_TOKEN, else .dev/admin-token); an agent token runs its own PC only")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for name, r := range map[string]float64{"fail-rate": *failRate, "fatal-rate": *fatalRate, "no-answer-rate": *noAnswer} {
		if r < 0 || r > 1 {
			return fmt.Errorf("-%s: want a fraction from 0 to 1, got %g", name, r)
		}
	}
	if *failRate+*fatalRate+*noAnswer > 1 {
		return fmt.Errorf("-fail-rate + -fatal-rate + -no-answer-rate must not exceed 1")
	}
	if *max < 1 {
		return fmt.Errorf("-max: want at least 1, got %d", *max)
	}
	if *wait < 0 || *wait > time.Minute {
		return fmt.Errorf("-wait: want from 0s to 1m, got %s", *wait)
	}
	base := strings.TrimRight(*server, "/") + "/api/v1"
	if *token == "" {
		if root, err := devstack.RepoRoot(); err == nil {
			if b, err := os.ReadFile(filepath.Join(root, ".dev", "admin-token")); err == nil { // #nosec G304 -- the dev stack's .dev/admin-token
				*token = strings.TrimSpace(string(b))
			}
		}
	}
	names := splitNonEmpty(*pcs)
	if len(names) == 0 {
		var err error
		if names, err = listPCNames(ctx, base, *token); err != nil {
			return err
		}
		if len(names) == 0 {
			return fmt.Errorf("no PCs: create some with POST /api/v1/pcs or pass -pcs")
		}
	}
	log.Printf("agent-sim: %d PCs (%s), latency %s, fail %.2f, fatal %.2f, no answer %.2f", len(names), strings.Join(names, ","), *latency, *failRate, *fatalRate, *noAnswer) // #nosec G706 -- the simulator's own settings, logged to its operator's terminal
	opts := agentsim.Options{
		BaseURL: base, PCs: names, Max: *max, Latency: *latency, Jitter: *jitter,
		FailRate: *failRate, FatalRate: *fatalRate, NoAnswerRate: *noAnswer, Ack: *ack, Logf: log.Printf, Token: *token,
		Wait: *wait, Legacy: *legacy,
	}
	if *history != "" {
		h, err := agentsim.CreateHistory(*history)
		if err != nil {
			return err
		}
		defer func() {
			if err := h.Close(); err != nil {
				log.Printf("agent-sim: history: %v", err)
			}
		}()
		opts.Record = h.Record
	}
	fleet := agentsim.Start(ctx, opts)
	if *every > 0 {
		go func() {
			t := time.NewTicker(*every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					log.Printf("agent-sim: %s", fleet.Stats.String())
				}
			}
		}()
	}
	<-ctx.Done()
	fleet.Wait()
	log.Printf("agent-sim: stopped: %s", fleet.Stats.String())
	return nil
}

func splitNonEmpty(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// listPCNames pages through GET /pcs.
func listPCNames(ctx context.Context, base, token string) ([]string, error) {
	var names []string
	cursor := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/pcs?limit=500&cursor="+cursor, nil) // #nosec G704 -- the API address the simulator's operator passes (-api)
		if err != nil {
			return nil, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req) // #nosec G704 -- the API address the simulator's operator passes (-api)
		if err != nil {
			return nil, fmt.Errorf("list pcs: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			_ = resp.Body.Close()
			return nil, fmt.Errorf("list pcs: answered %d (pass -token or -pcs)", resp.StatusCode)
		}
		var page struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list pcs: %w", err)
		}
		for _, p := range page.Items {
			names = append(names, p.Name)
		}
		if page.NextCursor == "" {
			return names, nil
		}
		cursor = page.NextCursor
	}
}
