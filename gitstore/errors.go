package gitstore

import (
	"errors"
	"fmt"
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
	KindConflict           Kind = "conflict"            // another change won a race that cannot be retried here
	KindInternal           Kind = "internal"            // I/O or corruption; logged, never shown verbatim
)

// Error is the store's error type. Message is safe to show to a caller.
type Error struct {
	Kind    Kind
	Message string

	// For KindPathConflict: the memory that holds the path or its parent or child.
	ConflictingMemoryID string
	ConflictingPath     string

	Err error // the cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorKind returns the kind of err: the Kind of the first *Error in its chain, or
// KindInternal for any other non-nil error.
func ErrorKind(err error) Kind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k Kind) bool { return ErrorKind(err) == k }

func invalidf(format string, args ...any) error {
	return &Error{Kind: KindInvalid, Message: fmt.Sprintf(format, args...)}
}

func notFoundf(format string, args ...any) error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf(format, args...)}
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
