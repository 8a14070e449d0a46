// fenced: a service that campaigns for leadership of an election and,
// while it leads, writes to a Store fenced with its leadership's fence.
// When the hold is lost (Lost closes) it stops writing at once and
// campaigns again; should a write be refused as stale anyway (a newer
// leader has written), it steps down.
//
//	fenced -endpoints 127.0.0.1:7001,... -store DIR [-election NAME] [-id ID] [-seconds S]
//
// Prints one line per event: "leader ID fence N", "wrote ID fence N",
// "lost ID fence N: REASON", "rejected ID fence N: ERR", "done ID".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"baton"
)

func main() {
	endpoints := flag.String("endpoints", "", "cluster endpoints (required)")
	election := flag.String("election", "fenced-demo", "the election")
	dir := flag.String("store", "", "the store's directory (required)")
	id := flag.String("id", fmt.Sprintf("pid-%d", os.Getpid()), "this candidate's name")
	seconds := flag.Int("seconds", 0, "stop after this many seconds (0: at SIGINT)")
	interval := flag.Duration("interval", 50*time.Millisecond, "time between writes")
	flag.Parse()
	if *endpoints == "" || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *seconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*seconds)*time.Second)
		defer cancel()
	}
	cl, err := baton.Connect(ctx, baton.Options{Endpoints: *endpoints, ClientName: *id})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fenced:", err)
		os.Exit(1)
	}
	defer cl.Close()
	s := Store{*dir}
	for ctx.Err() == nil {
		h, err := cl.Campaign(ctx, *election, []byte(*id))
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "fenced: campaign:", err)
				time.Sleep(time.Second)
			}
			continue
		}
		fmt.Printf("leader %s fence %d\n", *id, h.Fence())
		lead(ctx, h, s, *id, *interval)
		h.Unlock() // resign (ErrLost if it was lost: nothing to give back)
	}
	fmt.Printf("done %s\n", *id)
}

// lead writes under h until h is lost, the store refuses a write, or ctx
// ends.
func lead(ctx context.Context, h *baton.Hold, s Store, id string, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-h.Lost():
			fmt.Printf("lost %s fence %d: %v\n", id, h.Fence(), h.LostReason())
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := s.Write(h.Fence(), fmt.Sprintf("%s %d", id, n))
		switch {
		case errors.Is(err, ErrStaleFence):
			fmt.Printf("rejected %s fence %d: %v\n", id, h.Fence(), err)
			return
		case err != nil:
			fmt.Fprintln(os.Stderr, "fenced: write:", err)
			return
		}
		fmt.Printf("wrote %s fence %d\n", id, h.Fence())
	}
}
