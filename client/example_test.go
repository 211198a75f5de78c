package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/tickgate/tickgate/client"
)

// A schedule created, read back, listed by label and paused, with the API's refusals read
// as typed errors. (Run against a real API by the e2e and CLI tests; here it is compiled.)
func Example() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("TICKGATE_SERVER"), client.WithToken(os.Getenv("TICKGATE_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}

	cron, topic, typ := "0 3 * * *", "reports", "report.due"
	labels := client.Labels{"team": "billing"}
	created, err := c.CreateScheduleWithResponse(ctx, nil, client.CreateScheduleRequest{
		Name:   "nightly-report",
		Spec:   client.Spec{Cron: &cron, Timezone: ptr("Europe/Berlin")},
		Action: client.Action{Kind: client.ActionKindEvent, Topic: &topic, Type: &typ},
		Labels: &labels,
	})
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict:
		fmt.Println("exists already")
	case errors.As(err, &apiErr):
		log.Fatalf("refused: %s (field %s)", apiErr.Detail, apiErr.Field) // e.g. field spec.cron
	case err != nil:
		log.Fatal(err) // the API could not be reached, even after the retries
	default:
		fmt.Println("created, version", *created.JSON201.Version)
	}

	// Every schedule of the team, page after page.
	sel := "team=billing"
	for s, err := range c.Schedules(ctx, &client.ListSchedulesParams{Selector: &sel}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(*s.Name, *s.State, s.NextRunAt)
	}

	// A pause, with a note for the schedule's history.
	note := "billing freeze"
	if _, err := c.PauseScheduleWithResponse(ctx, "nightly-report", client.PauseRequest{Note: &note}); err != nil {
		log.Fatal(err)
	}
}

// A service that receives an http action's requests checks their Standard Webhooks
// signature with the schedule's signing secret before it acts.
func ExampleWebhookVerifier() {
	verifier, err := client.NewWebhookVerifier("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		log.Fatal(err)
	}
	verifier.Now = func() time.Time { return time.Unix(1614265330, 0) } // the request's time, for the example

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := verifier.VerifyRequest(r, 1<<20)
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "accepted %s", body)
	})

	req, _ := http.NewRequest(http.MethodPost, "/hook", strings.NewReader(`{"test": 2432232314}`))
	req.Header.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	req.Header.Set("webhook-timestamp", "1614265330")
	req.Header.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, req)
	fmt.Println(w.Code, w.Body.String())

	req.Header.Set("webhook-signature", "v1,forged")
	w = httptest.NewRecorder()
	handler.ServeHTTP(w, req)
	fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	// Output:
	// 200 accepted {"test": 2432232314}
	// 401 bad signature
}
