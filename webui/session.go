package webui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gitmem/gitmem/internal/durable"
)

// Sign-in: the browser sends an API key once, to POST /ui/login; the server checks it as the
// API would and answers a session cookie that names the key and when the session ends,
// signed with a secret only the server has. The cookie is HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it) and Secure under TLS. Each request looks
// the key up again, so a revoked key ends its sessions at once. The secret itself is never
// in the cookie.
//
// CSRF: every visitor has a random csrf cookie; each form carries a token, the HMAC of that
// cookie and the session, which a page of another origin can neither read nor compute. A
// POST without the right token changes nothing. (The server also refuses cross-origin
// POSTs by Sec-Fetch-Site and Origin, in httpapi.)

const (
	sessionCookie = "gitmem_session"
	csrfCookie    = "gitmem_csrf"
)

type sessions struct {
	secret []byte
	ttl    time.Duration
}

// loadSecret reads the signing secret at path, making it the first time.
func loadSecret(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err == nil && len(raw) >= 32 {
		return raw, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the web UI's session key: %w", err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	if err := durable.WriteFile(path, secret, 0o600); err != nil {
		return nil, fmt.Errorf("write the web UI's session key: %w", err)
	}
	return secret, nil
}

func (s *sessions) mac(parts ...string) string {
	h := hmac.New(sha256.New, s.secret)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// signIn sets the session cookie of key keyID.
func (s *sessions) signIn(w http.ResponseWriter, r *http.Request, keyID string) {
	exp := strconv.FormatInt(time.Now().Add(s.ttl).Unix(), 10)
	http.SetCookie(w, s.cookie(r, sessionCookie, keyID+"."+exp+"."+s.mac("session", keyID, exp), int(s.ttl.Seconds())))
}

// signOut ends the session in this browser.
func (s *sessions) signOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, s.cookie(r, sessionCookie, "", -1))
}

func (s *sessions) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// signedIn returns the key of the request's session, if its cookie is genuine and current.
func (s *sessions) signedIn(r *http.Request) (keyID string, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 {
		return "", false
	}
	if !hmac.Equal([]byte(parts[2]), []byte(s.mac("session", parts[0], parts[1]))) {
		return "", false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || time.Now().Unix() >= exp {
		return "", false
	}
	return parts[0], true
}

// csrfToken returns the token for the forms of the page that answers r, giving the
// browser its csrf cookie if it has none.
func (s *sessions) csrfToken(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) < 16 {
		raw := make([]byte, 18)
		rand.Read(raw)
		c = s.cookie(r, csrfCookie, base64.RawURLEncoding.EncodeToString(raw), 0)
		http.SetCookie(w, c)
		r.AddCookie(c) // so that this request's own check sees it too
	}
	return s.mac("csrf", c.Value, s.sessionValue(r))
}

// checkCSRF tells whether token is the one that r's cookies call for.
func (s *sessions) checkCSRF(r *http.Request, token string) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || token == "" {
		return false
	}
	return hmac.Equal([]byte(token), []byte(s.mac("csrf", c.Value, s.sessionValue(r))))
}

func (s *sessions) sessionValue(r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil {
		return c.Value
	}
	return ""
}
