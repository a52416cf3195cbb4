package gitstore

import (
	"fmt"
	"strings"
)

// The trailers a gitmem commit carries, read back by the catalog.
const (
	trailerMemory    = "Gitmem-Memory"
	trailerVersion   = "Gitmem-Version"
	trailerOperation = "Gitmem-Operation"
	trailerActor     = "Gitmem-Actor"
	trailerSession   = "Gitmem-Session"
	trailerAPIKey    = "Gitmem-Api-Key"
	trailerStore     = "Gitmem-Store"
	trailerStoreOp   = "Gitmem-Store-Operation"
)

// trailers is the parsed trailer block of a commit message, in order.
type trailers []struct{ Key, Value string }

func (t trailers) get(key string) string {
	for _, kv := range t {
		if strings.EqualFold(kv.Key, key) {
			return kv.Value
		}
	}
	return ""
}

// formatMessage builds a commit message: the subject, a blank line, the trailers.
func formatMessage(subject string, t trailers) string {
	var b strings.Builder
	b.WriteString(subject)
	b.WriteString("\n\n")
	for _, kv := range t {
		if kv.Value == "" {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", kv.Key, kv.Value)
	}
	return b.String()
}

// parseTrailers reads the last paragraph of a message if every line of it is a
// "Key: value" trailer, as git interpret-trailers does.
func parseTrailers(msg string) trailers {
	msg = strings.TrimRight(msg, "\n")
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return nil
	}
	var t trailers
	for _, line := range strings.Split(msg[i+2:], "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil
		}
		t = append(t, struct{ Key, Value string }{k, strings.TrimSpace(v)})
	}
	return t
}

// actorTrailers are the trailers that record who made a change.
func actorTrailers(a Actor) trailers {
	t := trailers{{trailerActor, string(a.Type) + " " + a.ID}}
	if s := a.SessionID(); s != "" {
		t = append(t, struct{ Key, Value string }{trailerSession, s})
	}
	if a.Type == SessionActor && a.APIKeyID != "" {
		t = append(t, struct{ Key, Value string }{trailerAPIKey, a.APIKeyID})
	}
	return t
}

// actorFromTrailers reads the actor back; ok is false when the commit has none.
func actorFromTrailers(t trailers, name, email string) (Actor, bool) {
	typ, id, ok := strings.Cut(t.get(trailerActor), " ")
	if !ok {
		return Actor{}, false
	}
	return Actor{Type: ActorType(typ), ID: id, Name: name, Email: email, APIKeyID: t.get(trailerAPIKey)}, true
}

// authorOf is the git author of a change made by a: name and an email that identify it.
// Those that a lacks are made up from its id (see Known).
func authorOf(a Actor) (name, email string) {
	name, email = a.Name, a.Email
	if name == "" {
		name = a.ID
	}
	if email == "" {
		email = a.ID + "@gitmem"
	}
	return name, email
}

// Known returns the name and email of a that say more than its id: a person's from their
// commits, an API key's name. Those that authorOf made up from the id are "".
func (a Actor) Known() (name, email string) {
	if a.Name != a.ID {
		name = a.Name
	}
	if a.Email != a.ID+"@gitmem" {
		email = a.Email
	}
	return name, email
}

// UserActorFor is the user actor of a person known by name and email, with the same id
// that their commits made with plain git get.
func UserActorFor(name, email string) Actor { return userActor(name, email) }

// userActor is the actor of a commit made with plain git: a user derived from the author's
// email, the same on every replica.
func userActor(name, email string) Actor {
	id := hashedID(UserPrefix, "user", strings.ToLower(email))
	return Actor{Type: UserActor, ID: id, Name: name, Email: email}
}

// SystemActor is gitmem itself, as the author of the changes that no caller asked for: the
// merges of sync, the deletes of expiry. Its id is the same on every replica.
var SystemActor = Actor{Type: ServiceAccountActor, ID: hashedID(ServiceAccountPrefix, "gitmem", "system"),
	Name: "gitmem", Email: "gitmem@gitmem"}
