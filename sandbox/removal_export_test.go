package sandbox

import (
	"context"
	"errors"
	"time"
)

// RemoveBy is removeBy with the client's own engine: the runner stops
// waiting for the removal at until, once the engine has the request. It
// says whether the removal was left to the engine (once it had the
// request) beside what the request ended with.
func RemoveBy(ctx context.Context, cli Reaper, id string, until time.Time) (left bool, err error) {
	err = removeBy(ctx, cli, id, until, removeTimeout)
	var l *removalLeft
	return errors.As(err, &l), err
}
