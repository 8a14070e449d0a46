package baton

import (
	"errors"
	"strings"
	"testing"
)

// TestErrnoTable checks errors.go against the C header's BATON_ERRNO_MAP
// both ways: every code libbaton names in the reserved range is a Go
// constant with that name, and every Go constant is such a code.
func TestErrnoTable(t *testing.T) {
	lo, hi := cErrRange()
	named := 0
	for code := lo; code <= hi; code++ {
		cname := cErrName(code)
		gname, ok := errnoNames[Errno(code)]
		switch {
		case cname == "BATON_EUNKNOWN" && ok:
			t.Errorf("Go has %d (%s), libbaton has no such code", code, gname)
		case cname != "BATON_EUNKNOWN" && !ok:
			t.Errorf("libbaton's %s (%d) has no Go constant", cname, code)
		case ok && cname != gname:
			t.Errorf("code %d: libbaton %s, Go %s", code, cname, gname)
		}
		if ok {
			named++
		}
	}
	if named != len(errnoNames) {
		t.Errorf("%d Go codes outside the range %d..%d", len(errnoNames)-named, lo, hi)
	}
	for code, name := range errnoNames {
		if Errno(code).Name() != name || Errno(code).Error() == "" {
			t.Errorf("%d: %q %q", code, Errno(code).Name(), Errno(code).Error())
		}
	}
}

// TestStructSizes: the binding fills or reads these structs field by
// field; a size other than these means libbaton added a field the
// binding does not know yet (add it, then the size here).
func TestStructSizes(t *testing.T) {
	want := map[string]int{
		"baton_opts":       72,
		"baton_lock_args":  48,
		"baton_lock_state": 64,
		"baton_holder":     56,
		"baton_waiter":     48,
		"baton_event":      24,
	}
	got := cSizes()
	for name, n := range want {
		if got[name] != n {
			t.Errorf("sizeof(%s) = %d, the binding knows %d", name, got[name], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d sizes checked, %d known", len(got), len(want))
	}
}

func TestErrorWrapping(t *testing.T) {
	err := newError("Lock", -4017, "lock 'x' lost")
	var be *Error
	if !errors.Is(err, ErrLost) || errors.Is(err, ErrSession) || !errors.As(err, &be) ||
		be.Msg != "lock 'x' lost" || !strings.Contains(err.Error(), "BATON_ELOST") {
		t.Fatalf("%v", err)
	}
}
