package main

import (
	"errors"
	"fmt"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
)

// The exit codes of every command, for scripts (docs/cli.md lists them). A refusal for
// reasons of several kinds (import --dir) exits with the first that applies of exitUsage,
// then exitConflict.
const (
	exitOK          = 0
	exitError       = 1   // anything else: I/O, an internal error, an error of the server
	exitUsage       = 2   // the command line is wrong, the input breaks a rule, or the store is archived; nothing changed
	exitNotFound    = 3   // no such store, memory or version
	exitConflict    = 4   // a precondition failed, a path or name is taken, another change won
	exitAuth        = 5   // the server wants a key, or refused the one given
	exitUnavailable = 6   // try again: the server does not answer or is busy, the directory is held
	exitStorage     = 7   // the disk of the data directory is full
	exitInterrupted = 130 // Ctrl-C or SIGTERM, as shells report a command that SIGINT ended
)

// invalidf is an error that exits 2 as a usageError does, but is not in the command line: of
// a config file, the environment, the input or a store's state. It is printed as it is,
// without the command's usage line.
func invalidf(format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	return &gitstore.Error{Kind: gitstore.KindInvalid, Message: err.Error(), Err: errors.Unwrap(err)}
}

// exitCode is the exit code for err.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, client.ErrAuth):
		return exitAuth
	case errors.Is(err, client.ErrUnreachable):
		return exitUnavailable
	}
	switch gitstore.ErrorKind(err) {
	case gitstore.KindInvalid, gitstore.KindArchived: // both a 400 over HTTP
		return exitUsage
	case gitstore.KindNotFound:
		return exitNotFound
	case gitstore.KindPreconditionFailed, gitstore.KindPathConflict, gitstore.KindConflict:
		return exitConflict
	case gitstore.KindUnavailable:
		return exitUnavailable
	case gitstore.KindStorage:
		return exitStorage
	}
	return exitError
}
