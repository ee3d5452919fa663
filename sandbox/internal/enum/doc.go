// Package enum names and parses the typed enums of sandbox and its
// drivers (modes, transports, run states): each is an int whose names
// are a list, 0 unset.
package enum
