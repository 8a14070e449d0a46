package baton

// #include <baton/baton.h>
import "C"

import (
	"context"
	"strings"
)

// Errno is one of libbaton's BATON_E* codes (include/baton/baton_defs.h).
// Each code is an exported constant below; compare with errors.Is:
//
//	if errors.Is(err, baton.ErrWouldBlock) { ... }
type Errno int

// The error codes, one per BATON_E* code of baton_defs.h, with its value.
// TestErrnoTable checks this list against the C header's table both ways
// (every code in the reserved range that libbaton names is here, with the
// same name, and nothing else is).
const (
	ErrInvalid     Errno = -4001 // BATON_EINVAL
	ErrNoMem       Errno = -4002 // BATON_ENOMEM
	ErrTimedOut    Errno = -4003 // BATON_ETIMEDOUT
	ErrConnRefused Errno = -4004 // BATON_ECONNREFUSED
	ErrCanceled    Errno = -4005 // BATON_ECANCELED
	ErrNotLeader   Errno = -4006 // BATON_ENOTLEADER
	ErrNoLeader    Errno = -4007 // BATON_ENOLEADER
	ErrNotHeld     Errno = -4008 // BATON_ENOTHELD
	ErrSession     Errno = -4009 // BATON_ESESSION
	ErrWouldBlock  Errno = -4010 // BATON_EWOULDBLOCK
	ErrProto       Errno = -4011 // BATON_EPROTO
	ErrVersion     Errno = -4012 // BATON_EVERSION
	ErrTooBig      Errno = -4013 // BATON_ETOOBIG
	ErrLimit       Errno = -4014 // BATON_ELIMIT
	ErrNotFound    Errno = -4015 // BATON_ENOTFOUND
	ErrStale       Errno = -4016 // BATON_ESTALE
	ErrLost        Errno = -4017 // BATON_ELOST
	ErrIO          Errno = -4018 // BATON_EIO
	ErrClosed      Errno = -4019 // BATON_ECLOSED
	ErrBusy        Errno = -4020 // BATON_EBUSY
	ErrUnavail     Errno = -4021 // BATON_EUNAVAIL
	ErrMalformed   Errno = -4022 // BATON_EMALFORMED
	ErrNoSpace     Errno = -4023 // BATON_ENOSPC
	ErrAuth        Errno = -4024 // BATON_EAUTH
	ErrPerm        Errno = -4025 // BATON_EPERM
	ErrTLS         Errno = -4026 // BATON_ETLS
	ErrDeadlock    Errno = -4027 // BATON_EDEADLK
)

// errnoNames: the C name of each constant above (the drift test's other half).
var errnoNames = map[Errno]string{
	ErrInvalid:     "BATON_EINVAL",
	ErrNoMem:       "BATON_ENOMEM",
	ErrTimedOut:    "BATON_ETIMEDOUT",
	ErrConnRefused: "BATON_ECONNREFUSED",
	ErrCanceled:    "BATON_ECANCELED",
	ErrNotLeader:   "BATON_ENOTLEADER",
	ErrNoLeader:    "BATON_ENOLEADER",
	ErrNotHeld:     "BATON_ENOTHELD",
	ErrSession:     "BATON_ESESSION",
	ErrWouldBlock:  "BATON_EWOULDBLOCK",
	ErrProto:       "BATON_EPROTO",
	ErrVersion:     "BATON_EVERSION",
	ErrTooBig:      "BATON_ETOOBIG",
	ErrLimit:       "BATON_ELIMIT",
	ErrNotFound:    "BATON_ENOTFOUND",
	ErrStale:       "BATON_ESTALE",
	ErrLost:        "BATON_ELOST",
	ErrIO:          "BATON_EIO",
	ErrClosed:      "BATON_ECLOSED",
	ErrBusy:        "BATON_EBUSY",
	ErrUnavail:     "BATON_EUNAVAIL",
	ErrMalformed:   "BATON_EMALFORMED",
	ErrNoSpace:     "BATON_ENOSPC",
	ErrAuth:        "BATON_EAUTH",
	ErrPerm:        "BATON_EPERM",
	ErrTLS:         "BATON_ETLS",
	ErrDeadlock:    "BATON_EDEADLK",
}

// Error returns libbaton's short text for the code (baton_strerror).
func (e Errno) Error() string { return C.GoString(C.baton_strerror(C.int(e))) }

// Name returns the code's C name, e.g. "BATON_ELOST".
func (e Errno) Name() string {
	if n, ok := errnoNames[e]; ok {
		return n
	}
	return "BATON_EUNKNOWN"
}

// Error is what every failed call returns: the code, the operation, and
// libbaton's detailed message (baton_errmsg). errors.Is(err, baton.ErrLost)
// compares the code; when a context ended the call, errors.Is(err,
// context.Canceled) or errors.Is(err, context.DeadlineExceeded) holds too.
type Error struct {
	Code Errno  // the BATON_E* code
	Op   string // the Go call, e.g. "Lock"
	Msg  string // libbaton's message; may be empty
	ctx  error  // the context's error when the context ended the call
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("baton: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	if e.Msg != "" {
		b.WriteString(e.Msg)
	} else {
		b.WriteString(e.Code.Error())
	}
	if e.ctx != nil {
		b.WriteString(" (")
		b.WriteString(e.ctx.Error())
		b.WriteString(")")
	}
	b.WriteString(" [")
	b.WriteString(e.Code.Name())
	b.WriteString("]")
	return b.String()
}

// Is reports whether target is this error's code.
func (e *Error) Is(target error) bool {
	code, ok := target.(Errno)
	return ok && code == e.Code
}

// Unwrap gives the context's error when a context ended the call.
func (e *Error) Unwrap() error { return e.ctx }

// newError makes the error of a failed call from its code and message.
func newError(op string, rc C.int, msg string) error {
	return &Error{Code: Errno(rc), Op: op, Msg: msg}
}

// ctxError is the error of a call that ctx ended: ErrCanceled or
// ErrTimedOut (for a deadline), wrapping ctx.Err().
func ctxError(op string, ctx context.Context, msg string) error {
	code := ErrCanceled
	if ctx.Err() == context.DeadlineExceeded {
		code = ErrTimedOut
	}
	return &Error{Code: code, Op: op, Msg: msg, ctx: ctx.Err()}
}
