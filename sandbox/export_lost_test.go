package sandbox

// SetCreated has the scan's sandboxes call f with the container's id once
// it exists and before it starts: a signal at that moment.
func SetCreated(o *SessionOptions, f func(id string)) { o.created = f }
