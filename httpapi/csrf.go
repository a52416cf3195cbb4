package httpapi

import (
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// A web page the user visits can send requests to gitmem on loopback, where it may serve
// without keys: a form or a simple fetch can POST text/plain, form-urlencoded or multipart
// bodies to another origin without asking it first. Two rules keep such pages out, on every
// route:
//   - refuseCrossOrigin: a state-changing request (not GET, HEAD or OPTIONS) that a browser
//     marks as sent from another origin (Sec-Fetch-Site, or else Origin against Host) is
//     refused with a 403. Clients that are not browsers (curl, the SDKs, git) send neither
//     header and pass.
//   - requireJSON: a request body on a route that takes JSON (/v1, /mcp) must come as
//     application/json (a type a page can send to another origin only if that origin allows
//     it by CORS, which gitmem never does), else 415. A request without a body needs no type.

// refuseCrossOrigin refuses state-changing requests that a browser sends from another origin.
func refuseCrossOrigin() echo.MiddlewareFunc {
	cop := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if err := cop.Check(r); err != nil {
				from := r.Header.Get("Origin")
				if from == "" {
					from = "Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site")
				}
				return forbidden("cross-origin request refused: a %s from a web page of another origin (%s) may not change anything here; "+
					"send it without an Origin header (as curl and the SDKs do) or from %s itself", r.Method, from, r.Host)
			}
			return next(c)
		}
	}
}

// requireJSON refuses a request body that is not application/json (UTF-8, the only charset
// JSON has), with a 415 that says so. A request without a body passes.
func requireJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		ct := r.Header.Get("Content-Type")
		typ, params, err := mime.ParseMediaType(ct)
		if err != nil || typ != "application/json" {
			if ct == "" {
				ct = "none"
			}
			return unsupportedMediaType("a request body must be JSON sent with Content-Type: application/json, got Content-Type %s "+
				"(with curl, add -H 'content-type: application/json'; bodies of other types are refused so that a web page cannot send one)", ct)
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return unsupportedMediaType("a JSON request body must be UTF-8: Content-Type application/json takes no charset but utf-8, got %q", cs)
		}
		return next(c)
	}
}
