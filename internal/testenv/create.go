package testenv

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateAll creates objs from a pool of goroutines, for load tests; objs get
// their server state (resourceVersion) back. It returns the first error.
func CreateAll[T client.Object](ctx context.Context, c client.Client, objs []T, concurrency int) error {
	work := make(chan T, len(objs))
	for _, o := range objs {
		work <- o
	}
	close(work)
	var (
		wg   sync.WaitGroup
		once sync.Once
		err  error
	)
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				if e := c.Create(ctx, o); e != nil {
					once.Do(func() { err = fmt.Errorf("creating %s: %w", o.GetName(), e) })
				}
			}
		}()
	}
	wg.Wait()
	return err
}
