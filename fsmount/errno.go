package fsmount

import (
	"context"
	"errors"
	"syscall"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
)

// errnoOf is the errno that a program sees for an error of the store: what the store
// refused, each with the errno that says why.
func errnoOf(err error) syscall.Errno {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return syscall.EINTR
	case errors.Is(err, client.ErrAuth):
		return syscall.EACCES // the key may not do it (read-only, or another store's)
	}
	switch gitstore.ErrorKind(err) {
	case gitstore.KindInvalid:
		switch gitstore.ErrorRule(err) {
		case gitstore.RuleTooLarge:
			return syscall.EFBIG
		case gitstore.RuleSecret:
			return syscall.EACCES
		case gitstore.RuleQuota:
			return syscall.EDQUOT
		}
		return syscall.EINVAL
	case gitstore.KindNotFound:
		return syscall.ENOENT
	case gitstore.KindPathConflict:
		return syscall.EEXIST
	case gitstore.KindArchived:
		return syscall.EROFS
	case gitstore.KindStorage:
		return syscall.ENOSPC
	case gitstore.KindUnavailable:
		return syscall.EAGAIN
	case gitstore.KindPreconditionFailed, gitstore.KindConflict:
		return syscall.EBUSY
	case gitstore.KindUnsupported:
		return syscall.ENOTSUP
	}
	return syscall.EIO
}

// refuse logs what the store refused (or failed to do) and returns its errno.
func (m *mountFS) refuse(op, rel string, err error) syscall.Errno {
	errno := errnoOf(err)
	level := m.log().Warn
	if errno == syscall.EIO {
		level = m.log().Error
	}
	level("mount: refused", "op", op, "path", "/"+rel, "errno", errnoName(errno), "err", err)
	return errno
}

var errnoNames = map[syscall.Errno]string{
	syscall.EINTR: "EINTR", syscall.EACCES: "EACCES", syscall.EFBIG: "EFBIG", syscall.EDQUOT: "EDQUOT",
	syscall.EINVAL: "EINVAL", syscall.ENOENT: "ENOENT", syscall.EEXIST: "EEXIST", syscall.EROFS: "EROFS",
	syscall.ENOSPC: "ENOSPC", syscall.EAGAIN: "EAGAIN", syscall.EBUSY: "EBUSY", syscall.ENOTSUP: "ENOTSUP",
	syscall.EIO: "EIO",
}

func errnoName(e syscall.Errno) string {
	if n, ok := errnoNames[e]; ok {
		return n
	}
	return e.Error()
}
