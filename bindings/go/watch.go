package baton

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"strings"
	"sync"
	"unsafe"
)

// EventKind is the kind of a watch event (enum baton_event_kind).
type EventKind int

// The event kinds.
const (
	// EventChange: the state right after the change at Revision.
	EventChange EventKind = C.BATON_EVENT_CHANGE
	// EventState: the state at the start (or a restart) of the watch.
	EventState EventKind = C.BATON_EVENT_STATE
	// EventGap: the state now; it changed meanwhile in ways not seen.
	EventGap EventKind = C.BATON_EVENT_GAP
	// EventSynced: no state; complete from Revision on (Restarted: forget
	// what you knew, the EventState events before it are the state).
	EventSynced EventKind = C.BATON_EVENT_SYNCED
)

// Event is one watch event (include/baton/baton.h, "Watches").
type Event struct {
	Kind      EventKind
	Restarted bool // EventSynced only
	Revision  uint64
	State     *LockState // nil for EventSynced
}

// Watch follows one lock, a prefix of names, or an election (Observe).
// A goroutine takes its events from libbaton and sends them on Events,
// which is closed when the watch ends: Close, the context, Client.Close,
// or an error (Err).
type Watch struct {
	c      *Client
	w      *C.baton_watch_t
	events chan Event
	stop   chan struct{}
	ended  chan struct{}
	once   sync.Once
	mu     sync.Mutex
	err    error
}

// pollMS bounds each baton_watch_next, so that Close and the context are
// noticed within it.
const pollMS = 200

// Watch starts a watch of key: one lock name, or (prefix) every lock whose
// name starts with key ("" is every lock). after is a revision the caller
// already knows (0: start from the current state). The watch runs until
// Close, ctx ends, or the Client closes.
func (c *Client) Watch(ctx context.Context, key string, prefix bool, after uint64) (*Watch, error) {
	var flags C.uint
	if prefix {
		flags = C.BATON_WATCH_PREFIX
	}
	return c.startWatch(ctx, "Watch", key, func(ck *C.char, w **C.baton_watch_t, msg *C.char) C.int {
		return C.goshim_watch(c.b, ck, flags, C.uint64_t(after), w, msg)
	})
}

// Observe watches election's leader: one EventChange per change of leader
// or of the leader's value (State.Holders[0] is the leader; none while
// nobody leads), besides the EventState, EventGap and EventSynced events
// of any watch.
func (c *Client) Observe(ctx context.Context, election string) (*Watch, error) {
	return c.startWatch(ctx, "Observe", election, func(ck *C.char, w **C.baton_watch_t, msg *C.char) C.int {
		return C.goshim_observe(c.b, ck, w, msg)
	})
}

func (c *Client) startWatch(ctx context.Context, op, key string,
	start func(*C.char, **C.baton_watch_t, *C.char) C.int) (*Watch, error) {
	if ctx.Err() != nil {
		return nil, ctxError(op, ctx, "")
	}
	if strings.IndexByte(key, 0) >= 0 {
		return nil, newError(op, C.BATON_EINVAL, "the key contains a NUL byte")
	}
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	if !c.enter() {
		return nil, newError(op, C.BATON_ECLOSED, "Close was called")
	}
	var cw *C.baton_watch_t
	var msg [C.GOSHIM_ERRMSG]C.char
	rc := start(ck, &cw, &msg[0])
	c.leave()
	if rc < 0 {
		return nil, newError(op, rc, C.GoString(&msg[0]))
	}
	w := &Watch{c: c, w: cw, events: make(chan Event), stop: make(chan struct{}), ended: make(chan struct{})}
	k := c.core
	k.mu.Lock()
	if k.closing {
		k.mu.Unlock()
		C.baton_watch_close(cw)
		return nil, newError(op, C.BATON_ECLOSED, "Close was called")
	}
	k.watches[w] = struct{}{}
	k.mu.Unlock()
	go w.run(ctx)
	return w, nil
}

// Events delivers the watch's events in order; closed when the watch ends.
func (w *Watch) Events() <-chan Event { return w.events }

// Err is why the watch ended: nil after Close, the context's error, or
// libbaton's (ErrPerm, ErrClosed...). Meaningful once Events is closed.
func (w *Watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close ends the watch and waits for its goroutine. Idempotent.
func (w *Watch) Close() {
	w.once.Do(func() { close(w.stop) })
	<-w.ended
}

func (w *Watch) end(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// run takes events until the watch ends, then frees it.
func (w *Watch) run(ctx context.Context) {
	defer func() {
		C.baton_watch_close(w.w)
		k := w.c.core
		k.mu.Lock()
		delete(k.watches, w)
		k.mu.Unlock()
		close(w.events)
		close(w.ended)
	}()
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			w.end(ctxError("Watch", ctx, ""))
			return
		default:
		}
		var ev *C.baton_event
		rc := C.baton_watch_next(w.w, pollMS, &ev)
		if rc == C.BATON_ETIMEDOUT {
			continue
		}
		if rc < 0 {
			w.end(newError("Watch", rc, ""))
			return
		}
		e := Event{Kind: EventKind(ev.kind), Restarted: ev.restarted != 0, Revision: uint64(ev.revision)}
		if ev.state != nil {
			e.State = goState(ev.state)
		}
		C.baton_event_free(ev)
		select {
		case w.events <- e:
		case <-w.stop:
			return
		case <-ctx.Done():
			w.end(ctxError("Watch", ctx, ""))
			return
		}
	}
}
