// hello: take a lock, print its fence, release it -- the README's Go
// example.
//
//	hello [-endpoints 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003] [-name demo]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"baton"
)

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003",
		"cluster endpoints (make run's by default)")
	name := flag.String("name", "demo", "the lock")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := baton.Connect(ctx, baton.Options{Endpoints: *endpoints, ClientName: "hello"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	defer c.Close()
	h, err := c.Lock(ctx, *name) // waits its turn; ctx ends the wait
	if err != nil {
		fmt.Fprintln(os.Stderr, "lock:", err)
		os.Exit(1)
	}
	fmt.Printf("holding %s with fence %d\n", h.Name(), h.Fence())
	select {
	case <-h.Lost(): // closed if the lock is taken away
		fmt.Println("lost:", h.LostReason())
	default:
	}
	if err := h.Unlock(); err != nil {
		fmt.Fprintln(os.Stderr, "unlock:", err)
		os.Exit(1)
	}
}
