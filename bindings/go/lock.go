package baton

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"strings"
	"time"
)

// Mode of a hold: exclusive (the default) or shared.
type Mode uint8

// The lock modes (BATON_MODE_*).
const (
	ModeExclusive Mode = C.BATON_MODE_EXCLUSIVE
	ModeShared    Mode = C.BATON_MODE_SHARED
)

// Owner names who holds a lock, within one process: a hold can be
// re-entered (Reentrant) only by its owner. Every lock call without As
// gets a fresh owner of its own.
type Owner uint64

// NewOwner returns an owner no other owner of this process equals
// (baton_owner_new).
func NewOwner() Owner { return Owner(C.baton_owner_new()) }

// LockOption sets one option of a lock call.
type LockOption func(*lockConfig)

type lockConfig struct {
	wait      time.Duration // < 0: forever
	shared    bool
	limit     uint32
	reentrant bool
	value     []byte
	delay     time.Duration // 0: the server's; < 0: none
	owner     Owner
}

// Shared asks for a shared hold (any number of shared holders, no
// exclusive one).
func Shared() LockOption { return func(c *lockConfig) { c.shared = true } }

// Limit makes the name a semaphore of n permits (2..10000).
func Limit(n uint32) LockOption { return func(c *lockConfig) { c.limit = n } }

// Reentrant lets the call's owner (As) take a name it holds again at once:
// a second Hold with the same fence; the lock is released when the last
// of them is unlocked. Hold.Reenter is Reentrant with the hold's owner.
func Reentrant() LockOption { return func(c *lockConfig) { c.reentrant = true } }

// As makes o the call's owner (by default each call has a fresh one).
func As(o Owner) LockOption { return func(c *lockConfig) { c.owner = o } }

// Value sets the hold's value (shown to readers and watchers); copied.
func Value(v []byte) LockOption { return func(c *lockConfig) { c.value = v } }

// LockDelay: how long the cluster keeps the lock from everyone should this
// session expire while holding it (0: the server's --lock-delay; < 0:
// none).
func LockDelay(d time.Duration) LockOption { return func(c *lockConfig) { c.delay = d } }

// Wait bounds the wait for the lock (ErrTimedOut after d); d <= 0 is Try.
// The context's deadline, if sooner, bounds it as well.
func Wait(d time.Duration) LockOption {
	return func(c *lockConfig) {
		if d <= 0 {
			d = 0
		}
		c.wait = d
	}
}

// Try does not wait: ErrWouldBlock if the lock is held or waited for.
func Try() LockOption { return func(c *lockConfig) { c.wait = 0 } }

// Lock acquires name, waiting until it is granted, ctx ends (the wait is
// withdrawn; the error satisfies errors.Is with ctx.Err()), or a Wait
// option's time runs out.
func (c *Client) Lock(ctx context.Context, name string, opts ...LockOption) (*Hold, error) {
	return c.lockCall(ctx, "Lock", []string{name}, opts)
}

// TryLock acquires name only if it is free and nobody waits for it
// (ErrWouldBlock otherwise).
func (c *Client) TryLock(ctx context.Context, name string, opts ...LockOption) (*Hold, error) {
	return c.lockCall(ctx, "TryLock", []string{name}, append(opts, Try()))
}

// LockMany acquires every name atomically (all of them, with one fence, or
// none). The Hold's Name is names[0]; one Unlock releases them all.
func (c *Client) LockMany(ctx context.Context, names []string, opts ...LockOption) (*Hold, error) {
	return c.lockCall(ctx, "LockMany", names, opts)
}

// Campaign waits until this candidate leads election, then returns its
// leadership as a Hold (an exclusive hold of the name election) with
// value, which Proclaim changes. Unlock resigns. Options as for Lock.
func (c *Client) Campaign(ctx context.Context, election string, value []byte, opts ...LockOption) (*Hold, error) {
	opts = append(opts, Value(value))
	return c.lockCall(ctx, "Campaign", []string{election}, opts)
}

// waitMS is the call's wait_ms: the Wait option's, or the time left until
// ctx's deadline if sooner (at least 1 ms: 0 would mean try), and whether
// the deadline set it.
func waitMS(ctx context.Context, wait time.Duration) (C.int64_t, bool) {
	if wait == 0 {
		return C.BATON_WAIT_TRY, false
	}
	byDeadline := false
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); wait < 0 || left < wait {
			wait, byDeadline = left, true
		}
	}
	switch {
	case wait < 0:
		return C.BATON_WAIT_FOREVER, false
	case wait < time.Millisecond:
		return 1, byDeadline
	}
	return C.int64_t((wait + time.Millisecond - 1) / time.Millisecond), byDeadline
}

func (c *Client) lockCall(ctx context.Context, op string, names []string, opts []LockOption) (*Hold, error) {
	cfg := lockConfig{wait: -1}
	for _, o := range opts {
		o(&cfg)
	}
	if ctx.Err() != nil {
		return nil, ctxError(op, ctx, "")
	}
	for _, n := range names {
		if strings.IndexByte(n, 0) >= 0 {
			return nil, newError(op, C.BATON_EINVAL, "a lock name contains a NUL byte")
		}
	}
	if cfg.owner == 0 {
		cfg.owner = NewOwner()
	}
	var a C.baton_lock_args
	var byDeadline bool
	a.wait_ms, byDeadline = waitMS(ctx, cfg.wait)
	switch {
	case cfg.delay < 0:
		a.lock_delay_ms = C.BATON_LOCK_DELAY_NONE
	case cfg.delay > 0:
		a.lock_delay_ms = C.int32_t(ms(cfg.delay))
	}
	if cfg.shared {
		a.mode = C.BATON_MODE_SHARED
	}
	a.limit = C.uint32_t(cfg.limit)
	if cfg.reentrant {
		a.reentrant = 1
	}
	a.owner = C.uint64_t(cfg.owner)
	if len(cfg.value) > 0 {
		v := C.CBytes(cfg.value)
		defer C.free(v)
		a.value = v
		a.value_len = C.size_t(len(cfg.value))
	}
	cnames := C.goshim_names_new(C.size_t(len(names)))
	defer C.goshim_names_free(cnames, C.size_t(len(names)))
	for i, n := range names {
		C.goshim_names_set(cnames, C.size_t(i), C.CString(n))
	}

	if !c.enter() {
		return nil, newError(op, C.BATON_ECLOSED, "Close was called")
	}
	defer c.leave()
	var cancel *C.baton_cancel_t
	if rc := C.baton_cancel_new(&cancel); rc < 0 {
		return nil, newError(op, rc, "")
	}
	k := c.core
	k.mu.Lock()
	if k.closing {
		C.baton_cancel(cancel)
	}
	k.cancels[cancel] = struct{}{}
	k.mu.Unlock()

	// The watcher fires the cancel handle when ctx ends; it is gone
	// before the call returns.
	var done, stopped chan struct{}
	if ctx.Done() != nil {
		done, stopped = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			select {
			case <-ctx.Done():
				C.baton_cancel(cancel)
			case <-done:
			}
		}()
	}
	var l *C.baton_lock_t
	var msg [C.GOSHIM_ERRMSG]C.char
	rc := C.goshim_lock_call(c.b, cnames, C.size_t(len(names)), &a, cancel, &l, &msg[0])
	if done != nil {
		close(done)
		<-stopped
	}
	k.mu.Lock()
	delete(k.cancels, cancel)
	closing := k.closing
	k.mu.Unlock()
	C.baton_cancel_free(cancel)

	if rc < 0 {
		text := C.GoString(&msg[0])
		switch {
		case ctx.Err() != nil && (rc == C.BATON_ECANCELED || rc == C.BATON_ETIMEDOUT):
			return nil, ctxError(op, ctx, text)
		case byDeadline && rc == C.BATON_ETIMEDOUT:
			return nil, &Error{Code: ErrTimedOut, Op: op, Msg: text, ctx: context.DeadlineExceeded}
		case closing && rc == C.BATON_ECANCELED:
			return nil, newError(op, C.BATON_ECLOSED, "Close was called")
		}
		return nil, newError(op, rc, text)
	}
	h := c.newHold(l, cfg.owner)
	if ctx.Err() != nil || closing {
		// The grant won the race with the cancel: give it back.
		h.unlockEntered()
		if closing {
			return nil, newError(op, C.BATON_ECLOSED, "Close was called")
		}
		return nil, ctxError(op, ctx, "")
	}
	return h, nil
}
