package domain

// SuccessVerdict is what the group commit of agents' success reports did with one report
// (store.RecordSuccesses; the SQL function device_results_record in store/schema.sql
// returns it). The API answers each verdict its own way.
type SuccessVerdict string

// The verdicts of a success report.
const (
	SuccessRecorded      SuccessVerdict = "recorded"        // committed; the answer is the execution as left
	SuccessReplayed      SuccessVerdict = "replayed"        // the idempotency key's first answer
	SuccessNotFound      SuccessVerdict = "not_found"       // no such execution
	SuccessForbidden     SuccessVerdict = "forbidden"       // another PC's execution
	SuccessKeyReused     SuccessVerdict = "key_reused"      // the key came with another body
	SuccessKeyInProgress SuccessVerdict = "key_in_progress" // the key's first request still runs
	SuccessUndecided     SuccessVerdict = "undecided"       // unchanged: the general path decides
)
