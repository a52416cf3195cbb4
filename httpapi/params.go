package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// body is a request's JSON object, read field by field so that every error names its field
// and a null can be told from an absent field.
type body map[string]json.RawMessage

// readBody reads a JSON object body that may have only the allowed fields. An empty body is
// an empty object (archive and redact take none).
func readBody(c echo.Context, allowed ...string) (body, error) {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, err
	}
	if err := gitstore.ValidateJSONText("the request body", raw); err != nil {
		return nil, err
	}
	b := body{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return b, nil
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, badRequest("the request body must be a JSON object: %v", err)
	}
	for k := range b {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			sort.Strings(allowed)
			return nil, badRequest("unknown field %q in the request body; this request takes: %s", k, strings.Join(allowed, ", "))
		}
	}
	return b, nil
}

// has reports whether the field is present and not null.
func (b body) has(field string) bool {
	raw, ok := b[field]
	return ok && string(bytes.TrimSpace(raw)) != "null"
}

// str reads an optional string field: nil if absent or null.
func (b body) str(field string) (*string, error) {
	if !b.has(field) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(b[field], &s); err != nil {
		return nil, badRequest("field %q must be a string", field)
	}
	return &s, nil
}

// requiredStr reads a string field that must be present (it may be "").
func (b body) requiredStr(field string) (string, error) {
	s, err := b.str(field)
	if err != nil {
		return "", err
	}
	if s == nil {
		return "", badRequest("field %q is required", field)
	}
	return *s, nil
}

// decode reads a field into v.
func (b body) decode(field string, v any, want string) error {
	if err := json.Unmarshal(b[field], v); err != nil {
		return badRequest("field %q must be %s", field, want)
	}
	return nil
}

// queryInt reads an optional integer query parameter within [min, max].
func queryInt(c echo.Context, name string, def, min, max int) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, badRequest("query parameter %s must be a whole number from %d to %d, got %q", name, min, max, v)
	}
	return n, nil
}

// queryBool reads an optional boolean query parameter.
func queryBool(c echo.Context, name string) (bool, error) {
	switch v := c.QueryParam(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, badRequest("query parameter %s must be true or false, got %q", name, v)
	}
}

// queryTime reads a time filter under either of its spellings (created_at[gte] as the
// SDKs send it, created_at_gte as the research preview did).
func queryTime(c echo.Context, names ...string) (time.Time, error) {
	for _, name := range names {
		v := c.QueryParam(name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, badRequest("query parameter %s must be an RFC 3339 time like 2026-01-02T15:04:05Z, got %q", name, v)
		}
		return t, nil
	}
	return time.Time{}, nil
}

// view reads the view query parameter: basic or full, with the given default.
func view(c echo.Context, def string) (full bool, err error) {
	v := c.QueryParam("view")
	if v == "" {
		v = def
	}
	switch v {
	case "basic":
		return false, nil
	case "full":
		return true, nil
	default:
		return false, badRequest("query parameter view must be basic or full, got %q", v)
	}
}

// limit reads the page size: 1 to 100 (default 20), at most 20 with view=full.
func limit(c echo.Context, full bool) (int, error) {
	n, err := queryInt(c, "limit", 20, 1, 100)
	if full && n > 20 {
		n = 20
	}
	return n, err
}

// storeListParams and versionListParams are the filters of the list routes; a time filter
// has two spellings (created_at[gte] as the SDKs send it, created_at_gte as the research
// preview did). Lists take order and order_by too, which are documented as accepted (the
// order of a list is fixed).
var (
	timeParams        = []string{"created_at[gte]", "created_at[lte]", "created_at_gte", "created_at_lte"}
	storeListParams   = append([]string{"limit", "page", "include_archived", "order", "order_by"}, timeParams...)
	versionListParams = append([]string{"view", "limit", "page", "memory_id", "operation", "session_id", "api_key_id",
		"service_account_id", "order", "order_by"}, timeParams...)
)

// queryParams are the query parameters each route takes, by method and route. Every route
// also takes beta, which the SDKs send (beta=true) on every call. A route missing here
// takes beta only.
var queryParams = map[string][]string{
	"GET /v1/memory_stores":                                          storeListParams,
	"POST /v1/memory_stores/:store/memories":                         {"view"},
	"GET /v1/memory_stores/:store/memories":                          {"view", "limit", "page", "path_prefix", "depth", "at", "order", "order_by"},
	"GET /v1/memory_stores/:store/memories/:memory":                  {"view", "at"},
	"POST /v1/memory_stores/:store/memories/:memory":                 {"view"},
	"PATCH /v1/memory_stores/:store/memories/:memory":                {"view"},
	"DELETE /v1/memory_stores/:store/memories/:memory":               {"expected_content_sha256"},
	"GET /v1/memory_stores/:store/memory_versions":                   versionListParams,
	"GET /v1/memory_stores/:store/memory_versions/:version":          {"view"},
	"POST /v1/memory_stores/:store/memory_versions/:version/restore": {"view"},
	"GET /v1/memory_stores/:store/memories/:memory/diff":             {"from", "to"},
	"GET /v1/memory_stores/:store/search":                            {"q", "path_prefix", "limit", "snippets"},
	"POST /v1/memory_stores/:store/tools/:name":                      {"at"},
	"GET /v1/memory_stores/:store/events":                            {"after"},
	"GET /v1/events":                                                 {"after"},
	"GET /v1/memory_stores/:store/proposals":                         {"state", "author_id", "limit", "page"},
}

// checkQuery refuses a request with a query parameter its route does not take, naming the
// parameter and those the route takes, so that a misspelt filter (?depht=1) is not ignored.
func checkQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		allowed := queryParams[c.Request().Method+" "+c.Path()]
		for name := range c.QueryParams() {
			if name == "beta" || slices.Contains(allowed, name) {
				continue
			}
			takes := "no query parameters but beta"
			if len(allowed) > 0 {
				takes = "these query parameters: " + strings.Join(append(slices.Sorted(slices.Values(allowed)), "beta"), ", ")
			}
			return badRequest("unknown query parameter %q; this request takes %s", name, takes)
		}
		return next(c)
	}
}
