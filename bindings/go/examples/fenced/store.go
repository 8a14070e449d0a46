package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrStaleFence: a write carried a fence lower than one the store has
// already seen, so its writer is no longer the leader.
var ErrStaleFence = errors.New("stale fence")

// Store is the resource the leader protects: a directory with an
// append-only log and the highest fence it has seen. It takes a write
// only if its fence is at least that high -- the fencing check that makes
// a paused or partitioned old leader harmless: once a newer leader has
// written, the old one's writes are refused, whatever it believes.
type Store struct{ dir string }

// Write appends line under fence, or refuses it with ErrStaleFence.
// Writers in other processes are serialised by a lock on the log file.
func (s Store) Write(fence uint64, line string) error {
	f, err := os.OpenFile(filepath.Join(s.dir, "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	highest, err := s.Highest()
	if err != nil {
		return err
	}
	if fence < highest {
		return fmt.Errorf("%w: %d < %d", ErrStaleFence, fence, highest)
	}
	if fence > highest {
		tmp := filepath.Join(s.dir, "fence.tmp")
		if err := os.WriteFile(tmp, []byte(strconv.FormatUint(fence, 10)), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(s.dir, "fence")); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(f, "%d %s\n", fence, line)
	return err
}

// Highest is the highest fence the store has taken (0: none yet).
func (s Store) Highest() (uint64, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "fence"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
