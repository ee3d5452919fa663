// Package baseline records accepted findings and holds a report to them:
// an accepted finding does not fail the gate, a new one does, and so does
// an accepted one that no longer occurs, so that a fixed problem leaves no
// silent exception behind.
package baseline
