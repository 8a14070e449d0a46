package baton

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// Hold is one held lock (a baton_lock_t): its name and fencing token.
// Unlock it when done; its methods may be called from any goroutine.
type Hold struct {
	c     *Client
	name  string
	fence uint64
	owner Owner
	key   grantKey

	lost    chan struct{}
	smu     sync.Mutex // guards lostErr; never held across a libbaton call
	lostErr error

	omu       sync.Mutex // serialises the calls on l
	l         *C.baton_lock_t
	unlockErr error
}

// newHold wraps a grant and registers it for lost notices. c.mu is
// read-held.
func (c *Client) newHold(l *C.baton_lock_t, owner Owner) *Hold {
	h := &Hold{
		c:     c,
		name:  C.GoString(C.baton_lock_name(l)),
		fence: uint64(C.baton_lock_fence(l)),
		owner: owner,
		lost:  make(chan struct{}),
		l:     l,
	}
	h.key = grantKey{h.name, h.fence}
	k := c.core
	k.mu.Lock()
	g := k.grants[h.key]
	if g == nil {
		g = &grant{}
		k.grants[h.key] = g
	}
	g.holds = append(g.holds, h)
	if g.lost != nil {
		h.markLost(g.lost)
	}
	k.mu.Unlock()
	return h
}

// forget takes h out of the lost-notice registry.
func (k *core) forget(h *Hold) {
	k.mu.Lock()
	defer k.mu.Unlock()
	g := k.grants[h.key]
	if g == nil {
		return
	}
	for i, x := range g.holds {
		if x == h {
			g.holds = append(g.holds[:i], g.holds[i+1:]...)
			break
		}
	}
	if len(g.holds) == 0 {
		delete(k.grants, h.key)
	}
}

// Name is the lock's name (a LockMany hold's first name).
func (h *Hold) Name() string { return h.name }

// Fence is the hold's fencing token: greater than every fence granted
// before it, for any lock. Pass it to the resource the lock protects.
func (h *Hold) Fence() uint64 { return h.fence }

// Owner is the owner the hold was granted to (see As and Reenter).
func (h *Hold) Owner() Owner { return h.owner }

// Lost is closed when libbaton declares the lock lost (the session's
// lease ran out, the session expired, or an operator forced a release) or
// when the Client is closed with the hold still held. From then on, stop
// relying on the lock; LostReason says why.
func (h *Hold) Lost() <-chan struct{} { return h.lost }

// LostReason is nil while Lost is open, then an error satisfying
// errors.Is with ErrLost (a forced release), ErrSession (the session
// ended) or ErrClosed (Client.Close).
func (h *Hold) LostReason() error {
	h.smu.Lock()
	defer h.smu.Unlock()
	return h.lostErr
}

func (h *Hold) markLost(err error) {
	h.smu.Lock()
	defer h.smu.Unlock()
	if h.lostErr == nil {
		h.lostErr = err
		close(h.lost)
	}
}

// Unlock releases the hold (the next waiter is granted the lock). It
// returns ErrLost (or ErrNotHeld) when the lock had been lost: the work
// done under it may have overlapped another holder's. Only the first call
// does anything; later ones return its result.
func (h *Hold) Unlock() error {
	h.omu.Lock()
	defer h.omu.Unlock()
	if h.l == nil {
		return h.unlockErr
	}
	if !h.c.enter() {
		h.freeLocked()
		return h.unlockErr
	}
	defer h.c.leave()
	return h.unlockEntered()
}

// unlockEntered releases l; c.mu is read-held and no other goroutine uses
// h (h.omu held, or h not yet handed out).
func (h *Hold) unlockEntered() error {
	var msg [C.GOSHIM_ERRMSG]C.char
	rc := C.goshim_unlock(h.c.b, h.l, &msg[0])
	h.l = nil
	h.c.core.forget(h)
	if rc < 0 {
		h.unlockErr = newError("Unlock", rc, C.GoString(&msg[0]))
	}
	return h.unlockErr
}

// free releases l's memory after Client.Close (libbaton then only frees).
func (h *Hold) free() {
	h.omu.Lock()
	defer h.omu.Unlock()
	if h.l != nil {
		h.freeLocked()
	}
}

func (h *Hold) freeLocked() {
	C.baton_unlock(h.l) // BATON_ECLOSED: frees only; b may be gone, so no message
	h.l = nil
	err := newError("Unlock", C.BATON_ECLOSED, "Close was called")
	h.unlockErr = err
	h.markLost(err)
}

// Proclaim replaces the hold's value (nil or empty removes it).
func (h *Hold) Proclaim(value []byte) error {
	h.omu.Lock()
	defer h.omu.Unlock()
	if h.l == nil {
		return newError("Proclaim", C.BATON_ENOTHELD, "the hold was unlocked")
	}
	if !h.c.enter() {
		return newError("Proclaim", C.BATON_ECLOSED, "Close was called")
	}
	defer h.c.leave()
	var v unsafe.Pointer
	if len(value) > 0 {
		v = C.CBytes(value)
		defer C.free(v)
	}
	var msg [C.GOSHIM_ERRMSG]C.char
	if rc := C.goshim_proclaim(h.c.b, h.l, v, C.size_t(len(value)), &msg[0]); rc < 0 {
		return newError("Proclaim", rc, C.GoString(&msg[0]))
	}
	return nil
}

// Reenter takes the hold's name again for its owner (a reentrant lock
// call): a second Hold with the same fence, granted at once; the lock is
// released when the last of them is unlocked.
func (h *Hold) Reenter(ctx context.Context, opts ...LockOption) (*Hold, error) {
	return h.c.lockCall(ctx, "Reenter", []string{h.name}, append(opts, As(h.owner), Reentrant()))
}

// batonGoLost is libbaton's lost callback (through shim.c). It runs on the
// client's I/O thread: it only records the loss and closes channels.
//
//export batonGoLost
func batonGoLost(handle C.uintptr_t, name *C.char, fence C.uint64_t, why C.int) {
	k := cgo.Handle(handle).Value().(*core)
	key := grantKey{C.GoString(name), uint64(fence)}
	err := &Error{Code: Errno(why), Op: "Lost",
		Msg: fmt.Sprintf("lock '%s' (fence %d) lost: %s", key.name, key.fence, Errno(why).Error())}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.grants == nil {
		return
	}
	g := k.grants[key]
	if g == nil {
		// Declared lost before its Hold was made: newHold finds it here.
		g = &grant{}
		k.grants[key] = g
	}
	if g.lost == nil {
		g.lost = err
	}
	for _, h := range g.holds {
		h.markLost(err)
	}
}
