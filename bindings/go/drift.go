package baton

/*
#include "shim.h"
*/
import "C"

// What the drift tests (drift_test.go) compare with the Go side: test
// files cannot use cgo, so the C values are read here.

// cErrName is baton_err_name(code).
func cErrName(code int) string { return C.GoString(C.baton_err_name(C.int(code))) }

// cErrRange is the reserved range of the BATON_E* codes.
func cErrRange() (min, max int) { return C.BATON_ERRNO_MIN, C.BATON_ERRNO_MAX }

// cSizes are the sizes of the public structs the binding fills or reads
// field by field: one that grows has a field the binding does not know.
func cSizes() map[string]int {
	return map[string]int{
		"baton_opts":       C.sizeof_baton_opts,
		"baton_lock_args":  C.sizeof_baton_lock_args,
		"baton_lock_state": C.sizeof_baton_lock_state,
		"baton_holder":     C.sizeof_baton_holder,
		"baton_waiter":     C.sizeof_baton_waiter,
		"baton_event":      C.sizeof_baton_event,
	}
}
