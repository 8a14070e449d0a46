package baton

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"strings"
	"unsafe"
)

// LockState is a lock's state as of raft index Revision (baton_lock_state):
// who holds it (fence order: Holders[0] is an exclusive lock's holder, an
// election's leader) and who waits (queue order). Holders and Waiters may
// be shorter than the totals when the values are large.
type LockState struct {
	Name         string
	Revision     uint64
	Held         bool
	Mode         Mode
	Limit        uint32
	Delayed      bool // free but in its lock-delay
	TotalHolders uint32
	Holders      []Holder
	TotalWaiters uint32
	Waiters      []Waiter
}

// Holder is one hold as a reader sees it.
type Holder struct {
	Session         uint64
	ClientName      string
	Fence           uint64
	GrantedRevision uint64
	Mode            Mode
	Count           uint32 // reentrant handles
	Value           []byte
}

// Waiter is one waiter, in queue order. WaitMS is what it asked to wait
// (-1: forever).
type Waiter struct {
	Session    uint64
	ClientName string
	Mode       Mode
	WaitMS     int64
	Value      []byte
}

func goBytes(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return C.GoBytes(p, C.int(n))
}

// goState copies st into Go memory.
func goState(st *C.baton_lock_state) *LockState {
	s := &LockState{
		Name:         C.GoString(st.name),
		Revision:     uint64(st.revision),
		Held:         st.held != 0,
		Mode:         Mode(st.mode),
		Limit:        uint32(st.limit),
		Delayed:      st.delayed != 0,
		TotalHolders: uint32(st.total_holders),
		TotalWaiters: uint32(st.total_waiters),
	}
	if st.n_holders > 0 {
		for _, h := range unsafe.Slice(st.holders, int(st.n_holders)) {
			s.Holders = append(s.Holders, Holder{
				Session:         uint64(h.session),
				ClientName:      C.GoString(h.client_name),
				Fence:           uint64(h.fence),
				GrantedRevision: uint64(h.granted_revision),
				Mode:            Mode(h.mode),
				Count:           uint32(h.count),
				Value:           goBytes(h.value, h.value_len),
			})
		}
	}
	if st.n_waiters > 0 {
		for _, w := range unsafe.Slice(st.waiters, int(st.n_waiters)) {
			s.Waiters = append(s.Waiters, Waiter{
				Session:    uint64(w.session),
				ClientName: C.GoString(w.client_name),
				Mode:       Mode(w.mode),
				WaitMS:     int64(w.wait_ms),
				Value:      goBytes(w.value, w.value_len),
			})
		}
	}
	return s
}

// LockState reads name's state, linearizably (it needs no session). ctx is
// checked before the call; the call itself is bounded by OpTimeout.
func (c *Client) LockState(ctx context.Context, name string) (*LockState, error) {
	return c.readState(ctx, "LockState", name, false)
}

// Leader reads election's current leader (ErrNotFound if nobody leads)
// and the election's state, linearizably: Holders[0] of the state is the
// leader.
func (c *Client) Leader(ctx context.Context, election string) (*Holder, *LockState, error) {
	st, err := c.readState(ctx, "Leader", election, true)
	if err != nil {
		return nil, nil, err
	}
	if len(st.Holders) == 0 {
		return nil, st, newError("Leader", C.BATON_ENOTFOUND, "nobody leads")
	}
	return &st.Holders[0], st, nil
}

func (c *Client) readState(ctx context.Context, op, name string, leader bool) (*LockState, error) {
	if ctx.Err() != nil {
		return nil, ctxError(op, ctx, "")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return nil, newError(op, C.BATON_EINVAL, "the name contains a NUL byte")
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if !c.enter() {
		return nil, newError(op, C.BATON_ECLOSED, "Close was called")
	}
	defer c.leave()
	var st *C.baton_lock_state
	var msg [C.GOSHIM_ERRMSG]C.char
	var rc C.int
	if leader {
		rc = C.goshim_leader(c.b, cname, &st, &msg[0])
	} else {
		rc = C.goshim_lock_state(c.b, cname, &st, &msg[0])
	}
	if rc < 0 {
		return nil, newError(op, rc, C.GoString(&msg[0]))
	}
	defer C.baton_lock_state_free(st)
	return goState(st), nil
}
