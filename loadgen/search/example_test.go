package search_test

import (
	"context"
	"fmt"
	"time"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/search"
)

// A target of one's own — here a function that answers after 100µs —
// runs through a concurrency sweep with no server, no OIP address and no
// model: each level is a measurement of its own, of 50 requests.
func Example() {
	target := loadgen.TargetFunc(func(ctx context.Context, seq uint64) error {
		time.Sleep(100 * time.Microsecond)
		return nil
	})
	levels, err := loadgen.ParseLevels("1:4:x2", true) // concurrency 1, 2 and 4
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := loadgen.Config{Load: loadgen.LoadConfig{ConcurrencyRange: levels, Requests: 50}}
	res, err := search.Run(context.Background(), target, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("level  requests  ok  errors")
	for _, s := range res.Steps {
		fmt.Printf("%-5s  %8d  %2d  %6d\n", s.Label(), s.Counts.Completed, s.Counts.OK, s.Counts.Errors)
	}
	fmt.Println("end:", res.EndReason)
	// Output:
	// level  requests  ok  errors
	// c=1          50  50       0
	// c=2          50  50       0
	// c=4          50  50       0
	// end: completed
}
