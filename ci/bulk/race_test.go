//go:build race

package bulk

// raceEnabled: under -race (make test runs ./ci/... again with it) the
// integration tests skip; the batch's concurrency is tested with fakes.
const raceEnabled = true
