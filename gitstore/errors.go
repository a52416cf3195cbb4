package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gitmem/gitmem/gitstore/internal/odb"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// Kind classifies an error so that each interface (HTTP, tools, CLI) can map it once.
type Kind string

// The kinds of error the store returns. Every error a Store or DataDir method returns is an
// *Error with one of these kinds, or a wrapped internal error (KindInternal).
const (
	KindInvalid            Kind = "invalid"             // the request breaks a rule; nothing changed
	KindNotFound           Kind = "not_found"           // unknown store, memory or version
	KindPreconditionFailed Kind = "precondition_failed" // a precondition did not hold; nothing changed
	KindPathConflict       Kind = "path_conflict"       // the path is taken, or is the parent or child of a memory
	KindArchived           Kind = "archived"            // the store is archived and read-only
	KindConflict           Kind = "conflict"            // another change won a race, or the state forbids it (store exists, unrelated histories); retrying the same request does not help
	KindUnavailable        Kind = "unavailable"         // a short-lived state (store closing, main.lock or the data directory held, search index rebuilding); retry in a moment
	KindUnsupported        Kind = "unsupported"         // this installation cannot do it (git is not installed); nothing changed
	KindStorage            Kind = "storage"             // the disk of the data directory is full or over quota; nothing changed
	KindInternal           Kind = "internal"            // I/O or corruption; logged, never shown verbatim
)

// Sentinels for the decisions callers make; match them with errors.Is, never on an error's
// text. Each is, or is wrapped in, an *Error of the kind noted.
var (
	// ErrStoreClosed: the store or data directory was closed (a server shutting down).
	// KindUnavailable.
	ErrStoreClosed = &Error{Kind: KindUnavailable, Message: "the store is closed" + RetryHint}
	// ErrNoStore: no store has that id (or name). KindNotFound.
	ErrNoStore = errors.New("no such memory store")
	// ErrStoreExists: a store with that id exists already (import). KindConflict.
	ErrStoreExists = errors.New("the memory store exists already")
	// ErrDataDirLocked: another process holds the data directory; errors.As gives a
	// *LockedError that names it. KindUnavailable.
	ErrDataDirLocked = errors.New("the data directory is in use by another process")
	// ErrRefLocked: a git process holds main.lock. KindUnavailable.
	ErrRefLocked = odb.ErrRefLocked
	// ErrNoGit: the git program is not installed. KindUnsupported, wrapped in an *Error or not.
	ErrNoGit = gitexec.ErrNoGit
)

// RetryHint ends the message of a KindUnavailable error that has nothing more particular to
// say, so that each interface (HTTP, tools, CLI) tells its caller the same: it is soon over.
const RetryHint = "; try again in a moment"

// LockedError says which process holds a data directory.
type LockedError struct {
	Dir    string
	Holder string // what the holder wrote in gitmem.lock, e.g. "gitmem (pid 12: gitmem serve)"
	PID    int    // the holder's process id, if it is gitmem
	URL    string // where the holder serves the directory over HTTP (gitmem serve), if it does
}

func (e *LockedError) Error() string {
	who := e.Holder
	if who == "" {
		who = "another process"
	}
	return fmt.Sprintf("data directory %s is in use by %s; stop it first, or talk to it over its HTTP API", e.Dir, who)
}

func (e *LockedError) Is(target error) bool { return target == ErrDataDirLocked }

// Error is the store's error type. Message is safe to show to a caller.
type Error struct {
	Kind    Kind
	Message string

	// For KindPathConflict: the memory that holds the path or its parent or child.
	ConflictingMemoryID string
	ConflictingPath     string

	// Rule, for some KindInvalid errors, names the rule broken, for a caller that answers
	// each apart (the mount gives each its own errno).
	Rule Rule

	Err error // the cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorKind returns the kind of err: the Kind of the first *Error in its chain;
// KindUnsupported for another error that is ErrNoGit; KindStorage for another error that
// IsNoSpace; KindInternal for any other non-nil error.
func ErrorKind(err error) Kind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Kind != KindInternal {
		return e.Kind
	}
	if errors.Is(err, ErrNoGit) {
		return KindUnsupported
	}
	if IsNoSpace(err) {
		return KindStorage
	}
	return KindInternal
}

// IsNoSpace reports whether err comes from a full disk (ENOSPC) or an exceeded disk quota
// (EDQUOT). Some libraries (bleve) format the cause into their message instead of wrapping
// it, so the messages of those errors count too.
func IsNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error())
}

// NoSpace returns err as a KindStorage error if it IsNoSpace (and is not already an error of
// another kind), with a message that names the cause and the file that could not be written,
// relative to the data directory root; any other err is returned unchanged. Every write of
// the store fails before it publishes anything, so the message says that nothing changed.
func NoSpace(err error, root string) error {
	var e *Error
	if errors.As(err, &e) && e.Kind != KindInternal || !IsNoSpace(err) {
		return err
	}
	cause := NoSpaceCause(err)
	where := "in the data directory"
	if p := failedPath(err); p != "" {
		if rel, rerr := filepath.Rel(root, p); rerr == nil && root != "" && filepath.IsLocal(rel) {
			where = fmt.Sprintf("in the data directory, writing %s", filepath.ToSlash(rel))
		}
	}
	return &Error{Kind: KindStorage, Err: err,
		Message: fmt.Sprintf("%s %s: nothing was changed; free space on that disk and try again", cause, where)}
}

// NoSpaceCause names the cause of an error that IsNoSpace: "no space left on device" or
// "disk quota exceeded".
func NoSpaceCause(err error) string {
	if errors.Is(err, syscall.EDQUOT) || !errors.Is(err, syscall.ENOSPC) && strings.Contains(err.Error(), syscall.EDQUOT.Error()) {
		return "disk quota exceeded"
	}
	return "no space left on device"
}

// failedPath returns the file of the first *fs.PathError or *os.LinkError in err's chain.
func failedPath(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.New
	}
	return ""
}

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k Kind) bool { return ErrorKind(err) == k }

// Rule names a rule of the store that a write (or an as-of read's at) broke.
type Rule string

// The rules that errors name.
const (
	RuleTooLarge Rule = "too_large" // content over MaxContentBytes
	RuleSecret   Rule = "secret"    // content holds a secret under the reject policy
	RuleQuota    Rule = "quota"     // the write would pass the store's quota
	RuleReview   Rule = "review"    // the path changes only through review (Policy.ReviewPaths)
	// RuleAtCommit: an at of a commit hash's form names no commit of main's first-parent
	// history, for a caller that names its own parameter in the error (the CLI's --at).
	RuleAtCommit Rule = "at_commit"
)

// ErrorRule returns the Rule of the first *Error in err's chain ("" for none).
func ErrorRule(err error) Rule {
	var e *Error
	if errors.As(err, &e) {
		return e.Rule
	}
	return ""
}

func invalidf(format string, args ...any) error {
	return &Error{Kind: KindInvalid, Message: fmt.Sprintf(format, args...)}
}

func notFoundf(format string, args ...any) error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf(format, args...)}
}

// noStore is the error for a store id that names no store: KindNotFound, and ErrNoStore.
// Where a name was given for an id, it says so.
func noStore(id string) error {
	msg := fmt.Sprintf("memory store %s not found", id)
	if id == "" {
		// As in .../memory_stores//memories: a shell variable for the id that was empty.
		msg = fmt.Sprintf("no memory store id where one belongs (an empty shell variable in the URL?): name the store by its id, %s...", StorePrefix)
	} else if !strings.HasPrefix(id, StorePrefix) {
		msg += fmt.Sprintf(" (a store is named here by its id, %s..., not its name)", StorePrefix)
	}
	return &Error{Kind: KindNotFound, Message: msg, Err: ErrNoStore}
}

func preconditionf(format string, args ...any) error {
	return &Error{Kind: KindPreconditionFailed, Message: fmt.Sprintf(format, args...)}
}

func pathConflict(path, conflictingID, conflictingPath string) error {
	var msg string
	switch {
	case conflictingPath == path:
		msg = fmt.Sprintf("path %s is already taken by memory %s", path, conflictingID)
	case len(conflictingPath) < len(path):
		msg = fmt.Sprintf("path %s is below memory %s at %s: a memory cannot also be a directory", path, conflictingID, conflictingPath)
	default:
		msg = fmt.Sprintf("path %s is a directory that holds memory %s at %s: a directory cannot also be a memory", path, conflictingID, conflictingPath)
	}
	return &Error{Kind: KindPathConflict, Message: msg, ConflictingMemoryID: conflictingID, ConflictingPath: conflictingPath}
}
