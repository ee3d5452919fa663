// Package scan is the batch scan driver: it opens a session
// (sandbox.Open) on one server, lists its tools, plans the calls
// (probes), makes them with their repeats, replays what a call's effects
// need to be told apart, follows tools that appear late, reads the other
// surfaces, and returns the observations in their deterministic form, with
// no verdict (ci/verdict judges them; ci/gate is scan and verdict as one
// call). --isolation call gives each call group a session of its own with
// the same bait.
package scan
