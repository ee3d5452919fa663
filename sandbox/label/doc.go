// Package label names the Docker labels that mark everything mcpsandbox
// creates, so that cleanup and orphan reaping select by label and never touch
// anything else.
package label
