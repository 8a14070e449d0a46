// Package baton is the Go binding of libbaton, the client library of baton,
// a replicated lock service. It calls libbaton's blocking API through cgo.
//
// A Client is one session with a cluster. Every lock call is its own
// waiter with its own owner (baton_owner_new), never the calling OS
// thread's, since goroutines move between threads: two goroutines of one
// Client that lock the same name queue in FIFO order like two clients.
// Cancelling a call's context withdraws its wait (baton_cancel). See
// README.md for the whole API.
package baton

/*
#cgo LDFLAGS: -lbaton
#include "shim.h"
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// Options of Connect. Zero values mean libbaton's defaults.
type Options struct {
	// Endpoints: comma-separated "host:port" of any cluster nodes.
	Endpoints string
	// ClientName is shown by batonctl; "" for "baton".
	ClientName string
	// ConnectTimeout bounds Connect (0: 5 s); a context deadline that
	// comes sooner bounds it instead.
	ConnectTimeout time.Duration
	// OpTimeout is the longest wait for any reply, not counting time
	// queued for a lock (0: 10 s).
	OpTimeout time.Duration
	// SessionTTL is the session lease asked for (0: 10 s).
	SessionTTL time.Duration
	// TLSCA: the CA file (PEM) the nodes are verified with; "" for
	// plaintext. TLSCert and TLSKey: a client certificate and its key.
	TLSCA, TLSCert, TLSKey string
	// Token: the bearer token naming this client's principal.
	Token string
	// ReadOnly: a reader, with no session: LockState, Leader, Watch and
	// Observe work, lock calls fail with ErrSession.
	ReadOnly bool
}

// Client is one session with a cluster (a baton_t). All its methods may
// be called from any goroutine.
type Client struct {
	b *C.baton_t
	h cgo.Handle // of core, for the lost callback

	// mu is read-held by every call into libbaton that uses b, and
	// write-held by Close around baton_close: b (whose error messages are
	// read after each call) lives until no call is inside.
	mu     sync.RWMutex
	closed bool // under mu

	closeDone chan struct{} // closed when Close has finished

	core *core
}

// core is what the lost callback reaches: the holds and the running
// calls' cancel handles. Its mutex is never held across a libbaton call.
type core struct {
	mu      sync.Mutex
	closing bool
	grants  map[grantKey]*grant
	cancels map[*C.baton_cancel_t]struct{}
	watches map[*Watch]struct{}
}

// grantKey names one grant: libbaton reports a lost lock by name and fence.
type grantKey struct {
	name  string
	fence uint64
}

// grant: the handles of one grant (reentrant handles share it), and why
// it was lost, once it was (possibly before its first handle was made).
type grant struct {
	holds []*Hold
	lost  error
}

func ms(d time.Duration) C.uint {
	if d <= 0 {
		return 0
	}
	if d < time.Millisecond {
		return 1
	}
	return C.uint(d / time.Millisecond)
}

// Connect opens a session (a reader, with Options.ReadOnly, opens none).
// It returns when the session is open or has failed; ctx is checked first
// and its deadline bounds the connect timeout (libbaton's connect cannot
// be interrupted otherwise).
func Connect(ctx context.Context, o Options) (*Client, error) {
	if ctx.Err() != nil {
		return nil, ctxError("Connect", ctx, "")
	}
	var co C.baton_opts
	var strs []*C.char
	cstr := func(s string) *C.char {
		if s == "" {
			return nil
		}
		p := C.CString(s)
		strs = append(strs, p)
		return p
	}
	defer func() {
		for _, p := range strs {
			C.free(unsafe.Pointer(p))
		}
	}()
	co.endpoints = cstr(o.Endpoints)
	co.client_name = cstr(o.ClientName)
	co.tls_ca_file = cstr(o.TLSCA)
	co.tls_cert_file = cstr(o.TLSCert)
	co.tls_key_file = cstr(o.TLSKey)
	co.token = cstr(o.Token)
	connect := o.ConnectTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return nil, ctxError("Connect", ctx, "")
		}
		if connect <= 0 || left < connect {
			connect = left
		}
	}
	co.connect_timeout_ms = ms(connect)
	co.op_timeout_ms = ms(o.OpTimeout)
	co.session_ttl_ms = ms(o.SessionTTL)
	if o.ReadOnly {
		co.read_only = 1
	}
	var b *C.baton_t
	var msg [C.GOSHIM_ERRMSG]C.char
	if rc := C.goshim_connect(&co, &b, &msg[0]); rc < 0 {
		if ctx.Err() != nil && Errno(rc) == ErrUnavail {
			return nil, ctxError("Connect", ctx, C.GoString(&msg[0]))
		}
		return nil, newError("Connect", rc, C.GoString(&msg[0]))
	}
	c := &Client{b: b, closeDone: make(chan struct{}), core: &core{
		grants:  make(map[grantKey]*grant),
		cancels: make(map[*C.baton_cancel_t]struct{}),
		watches: make(map[*Watch]struct{}),
	}}
	c.h = cgo.NewHandle(c.core)
	C.goshim_on_lost(b, C.uintptr_t(c.h))
	if ctx.Err() != nil { // ended while libbaton connected
		c.Close()
		return nil, ctxError("Connect", ctx, "")
	}
	return c, nil
}

// SessionID is the current session's id (as batonctl shows it).
func (c *Client) SessionID() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return 0
	}
	return uint64(C.baton_session_id(c.b))
}

// enter read-holds c.mu for one call into libbaton; false once closed.
func (c *Client) enter() bool {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return false
	}
	return true
}

func (c *Client) leave() { c.mu.RUnlock() }

// Close ends the session: lock calls still waiting return ErrClosed,
// watches end, the cluster releases every lock held, and every Hold not
// yet unlocked is freed, its Lost channel closed with LostReason
// ErrClosed (its Unlock then returns ErrClosed). It waits for calls in
// progress (each bounded by OpTimeout). Idempotent.
func (c *Client) Close() error {
	k := c.core
	k.mu.Lock()
	if k.closing {
		k.mu.Unlock()
		<-c.closeDone // another Close: wait until it is done
		return nil
	}
	k.closing = true
	for cn := range k.cancels {
		C.baton_cancel(cn)
	}
	watches := make([]*Watch, 0, len(k.watches))
	for w := range k.watches {
		watches = append(watches, w)
	}
	k.mu.Unlock()
	for _, w := range watches {
		w.Close()
	}

	c.mu.Lock()
	c.closed = true
	C.baton_close(c.b) // joins the I/O thread: no lost callback after it
	c.mu.Unlock()
	c.h.Delete()

	k.mu.Lock()
	var holds []*Hold
	for _, g := range k.grants {
		holds = append(holds, g.holds...)
	}
	k.grants = nil
	k.mu.Unlock()
	for _, h := range holds {
		h.free()
	}
	close(c.closeDone)
	return nil
}
