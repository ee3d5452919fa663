//go:build !linux

package quiet

// Pending is Linux's: there is no /proc to read here.
func Pending(opts Options) (Wakeups, error) { return nil, ErrUnsupported }
