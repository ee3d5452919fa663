//go:build !linux

package overlay

import "errors"

// Journal is Linux's (inotify); elsewhere every snapshot walks.
type Journal struct{}

// DefaultJournalDirs bounds the directories one journal watches.
const DefaultJournalDirs = 8192

// OpenJournal needs Linux.
func OpenJournal(maxDirs int) (*Journal, error) {
	return nil, errors.New("a change journal needs Linux")
}

// Broken says why the journal cannot be used.
func (j *Journal) Broken() string { return "no change journal" }

// Close does nothing.
func (j *Journal) Close() error { return nil }
