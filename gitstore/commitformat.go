package gitstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The commit format: what a commit of main means to gitmem. Every Gitmem-* trailer is
// declared here, with how its value is written and read; the catalog (catalog_apply.go,
// applyMerge in merge.go), the merger and the history readers (plain.go) read commits
// through these functions. A commit made by gitmem is one version of one memory, named by
// its trailers; a commit made with plain git has none, and the ids of its changes are
// derived from the commit and the path (plainVersionID and plainMemoryID in plain.go, the
// one place that derives ids from a commit).

// TrailerPrefix starts the key of every trailer that gitmem writes and reads. A push of
// commits that carry one is refused (gitserve), since they would speak for gitmem.
const TrailerPrefix = "Gitmem-"

// The trailers of a commit that gitmem made.
const (
	// A version: the memory, the version and its operation (created, modified, deleted).
	trailerMemory    = "Gitmem-Memory"
	trailerVersion   = "Gitmem-Version"
	trailerOperation = "Gitmem-Operation"
	// Who made it: "<actor type> <actor id>", the session and the API key behind a session.
	trailerActor   = "Gitmem-Actor"
	trailerSession = "Gitmem-Session"
	trailerAPIKey  = "Gitmem-Api-Key"
	// A change of the store's metadata instead of a version: the store and the operation.
	trailerStore   = "Gitmem-Store"
	trailerStoreOp = "Gitmem-Store-Operation"
	// A step of a proposal's review, recorded in main as a commit that changes nothing:
	// the proposal and its new state (opened, approved, rejected).
	trailerProposal      = "Gitmem-Proposal"
	trailerProposalState = "Gitmem-Proposal-State"
	// Who approved the change in review (package proposals): "<actor type> <actor id>".
	trailerApprovedBy = "Gitmem-Approved-By"
	// The version that a restore brought back (history.go, revert.go).
	trailerRestoredFrom = "Gitmem-Restored-From"
	// What a revert commit reverts: "session sesn_…" or "api_key apikey_…", with the range
	// if it has bounds (RevertInput.trailer).
	trailerReverts = "Gitmem-Reverts"
	// A redaction recorded in the rewritten commit of the redacted version: "<version id>
	// <actor type> <actor id> <RFC 3339 time>" (redactedValue).
	trailerRedacted = "Gitmem-Redacted"
	// The hash that a commit made with plain git had before a redaction rewrote it: its ids
	// derive from it (derivationSource in plain.go).
	trailerDerivedFrom = "Gitmem-Derived-From"
	// A rename that a commit made with plain git made, recorded when a redaction rewrote the
	// commit: "<from path> <to path>", each quoted as Go quotes a string (renamedValue).
	// plainRenames pairs a removed file with an added one by their content, and the marker
	// that a redaction puts on one side leaves the other side's content unmatched.
	trailerRenamed = "Gitmem-Renamed"
)

// TrailerRedacted is the trailer in which a rewritten commit records a redaction.
const TrailerRedacted = trailerRedacted

// The trailers of a merge commit that gitmem made (merge.go). They tell the catalog of
// every replica, whichever order it applied the merge's two sides in, which memory lives at
// each path that both sides changed and which version of it is current.
const (
	mergeTrailerPrefix = "Gitmem-Merge-"
	// A mergeLive: the memory lives at path, with a version that the merge made.
	trailerMergeLive = "Gitmem-Merge-Live"
	// A mergeGone: the memory is deleted, as of the version.
	trailerMergeGone = "Gitmem-Merge-Gone"
	// "<path>": no memory lives at path; mergeFreeNone marks a merge that resolved nothing.
	trailerMergeFree = "Gitmem-Merge-Free"
	mergeFreeNone    = "-"
)

// renamedValue is the value of a Gitmem-Renamed trailer.
func renamedValue(from, to string) string { return strconv.Quote(from) + " " + strconv.Quote(to) }

// parseRenamed reads the value of a Gitmem-Renamed trailer.
func parseRenamed(v string) (from, to string, ok bool) {
	q, err := strconv.QuotedPrefix(v)
	if err != nil || len(v) < len(q)+1 || v[len(q)] != ' ' {
		return "", "", false
	}
	from, err = strconv.Unquote(q)
	if err != nil {
		return "", "", false
	}
	to, err = strconv.Unquote(v[len(q)+1:])
	return from, to, err == nil
}

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

// addTrailers appends trailers to a message: to its trailer block if it ends with one,
// else as a new paragraph.
func addTrailers(msg string, t trailers) string {
	msg = strings.TrimRight(msg, "\n")
	sep := "\n\n"
	if parseTrailers(msg) != nil {
		sep = "\n"
	}
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString(sep)
	for _, kv := range t {
		fmt.Fprintf(&b, "%s: %s\n", kv.Key, kv.Value)
	}
	return b.String()
}

// version returns the memory and the version that a commit gitmem made names; ok is false
// for a commit made with plain git.
func (t trailers) version() (mem, ver string, ok bool) {
	mem, ver = t.get(trailerMemory), t.get(trailerVersion)
	return mem, ver, mem != "" && ver != ""
}

// GitmemTrailers returns the keys of the trailers in a commit message that gitmem writes
// and the catalog reads (Gitmem-Version, Gitmem-Actor, ...), as the catalog finds them. A
// commit that has them is read as gitmem's own, with the actor and ids they name.
func GitmemTrailers(message string) []string {
	var keys []string
	for _, kv := range parseTrailers(message) {
		if len(kv.Key) > len(TrailerPrefix) && strings.EqualFold(kv.Key[:len(TrailerPrefix)], TrailerPrefix) {
			keys = append(keys, kv.Key)
		}
	}
	return keys
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

// trailer is the value of the Gitmem-Reverts trailer of the revert's commits.
func (in RevertInput) trailer() string {
	v := in.label()
	if !in.Since.IsZero() {
		v += " since " + fmtTime(in.Since)
	}
	if !in.Until.IsZero() {
		v += " until " + fmtTime(in.Until)
	}
	return v
}

// redactedValue is the value of the Gitmem-Redacted trailer that records redaction r of
// version id.
func redactedValue(id string, r redaction) string {
	return fmt.Sprintf("%s %s %s %s", id, r.ActorType, r.ActorID, msTime(r.At).Format(time.RFC3339Nano))
}

// redactionOf reads the redaction of version id from a commit's trailers, if it has one.
func redactionOf(msg, id string) *redaction {
	for _, kv := range parseTrailers(msg) {
		if !strings.EqualFold(kv.Key, trailerRedacted) {
			continue
		}
		f := strings.Fields(kv.Value)
		if len(f) != 4 || f[0] != id {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f[3])
		if err != nil {
			continue
		}
		return &redaction{At: at.UnixMilli(), ActorType: ActorType(f[1]), ActorID: f[2]}
	}
	return nil
}

// RecordedRedaction is a redaction as a rewritten commit records it (a Gitmem-Redacted
// trailer).
type RecordedRedaction struct {
	VersionID string
	Actor     Actor
	At        time.Time
}

// RedactionsIn returns the redactions that a commit message records.
func RedactionsIn(message string) []RecordedRedaction {
	var out []RecordedRedaction
	for _, kv := range parseTrailers(message) {
		if !strings.EqualFold(kv.Key, trailerRedacted) {
			continue
		}
		f := strings.Fields(kv.Value)
		if len(f) != 4 {
			continue
		}
		if r := redactionOf(message, f[0]); r != nil {
			out = append(out, RecordedRedaction{VersionID: f[0], Actor: Actor{Type: r.ActorType, ID: r.ActorID}, At: msTime(r.At)})
		}
	}
	return out
}

// isGitmemMerge reports whether a commit message is one of a merge that gitmem made.
func isGitmemMerge(msg string) bool {
	for _, kv := range parseTrailers(msg) {
		if strings.HasPrefix(strings.ToLower(kv.Key), strings.ToLower(mergeTrailerPrefix)) {
			return true
		}
	}
	return false
}

// mergeLive is the value of a Gitmem-Merge-Live trailer: "<memory id> <version id>
// <operation> <path>".
type mergeLive struct{ mem, ver, op, path string }

func (l mergeLive) value() string { return strings.Join([]string{l.mem, l.ver, l.op, l.path}, " ") }

func parseMergeLive(v string) (mergeLive, bool) {
	f := strings.SplitN(v, " ", 4)
	if len(f) != 4 {
		return mergeLive{}, false
	}
	return mergeLive{mem: f[0], ver: f[1], op: f[2], path: f[3]}, true
}

// mergeGone is the value of a Gitmem-Merge-Gone trailer: "<memory id> <version id> <path>".
type mergeGone struct{ mem, ver, path string }

func (g mergeGone) value() string { return g.mem + " " + g.ver + " " + g.path }

func parseMergeGone(v string) (mergeGone, bool) {
	f := strings.SplitN(v, " ", 3)
	if len(f) != 3 {
		return mergeGone{}, false
	}
	return mergeGone{mem: f[0], ver: f[1], path: f[2]}, true
}

// mergeTrailers are the trailers of a merge that gitmem made, after those of its actor:
// the memories that live, those that are gone and the paths that are free. A merge that
// resolved nothing gets a Gitmem-Merge-Free of mergeFreeNone, which marks it as gitmem's.
func mergeTrailers(live []mergeLive, gone []mergeGone, free []string) trailers {
	var t trailers
	for _, l := range live {
		t = append(t, struct{ Key, Value string }{trailerMergeLive, l.value()})
	}
	for _, g := range gone {
		t = append(t, struct{ Key, Value string }{trailerMergeGone, g.value()})
	}
	for _, p := range free {
		t = append(t, struct{ Key, Value string }{trailerMergeFree, p})
	}
	if len(live)+len(gone)+len(free) == 0 {
		t = append(t, struct{ Key, Value string }{trailerMergeFree, mergeFreeNone})
	}
	return t
}

// mergedPath is the path that a trailer of a merge gitmem made names: a memory's that lives
// or is gone there, or a free one; "" for another trailer, or one that is not well formed.
func mergedPath(key, value string) string {
	switch {
	case strings.EqualFold(key, trailerMergeLive):
		l, _ := parseMergeLive(value)
		return l.path
	case strings.EqualFold(key, trailerMergeGone):
		g, _ := parseMergeGone(value)
		return g.path
	case strings.EqualFold(key, trailerMergeFree) && value != mergeFreeNone:
		return value
	}
	return ""
}
