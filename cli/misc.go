package cli

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// rawBody is a generated response's raw answer (its Body field).
func rawBody(r any) []byte {
	v := reflect.ValueOf(r)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if f := v.FieldByName("Body"); f.IsValid() && f.Kind() == reflect.Slice {
		return f.Bytes()
	}
	return nil
}

func splitWords(s string) []string { return strings.Fields(s) }

func itoa(n int) string { return strconv.Itoa(n) }

func joinAny(v any) string {
	list, _ := v.([]any)
	parts := make([]string, len(list))
	for i, x := range list {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

// healthSummary reads a wave's health results as "2/3 ok; billing: <why>".
func healthSummary(v any) string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return ""
	}
	ok := 0
	var failed []string
	for _, x := range list {
		r, _ := x.(map[string]any)
		if r["ok"] == true {
			ok++
			continue
		}
		failed = append(failed, fmt.Sprintf("%v: %v", r["target"], r["detail"]))
	}
	s := fmt.Sprintf("%d/%d ok", ok, len(list))
	if len(failed) > 0 {
		s += "; " + strings.Join(failed, "; ")
	}
	return s
}
