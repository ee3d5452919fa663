// Package clientverdict decides what `mcpsandbox client` found: whether an
// untrusted server's readOnlyHint decides that a client asks no human.
// It is pure logic over what the runs observed (see sandbox/clientrun), so
// that every path is tested without an engine.
//
// The twin reads each message a client sends once, as the judge
// (sandbox/wire), and the ledger keeps every place where mainstream JSON
// readers part on one (a duplicate "name", a "NAME" beside it, NaN...).
// A leg whose client sent such a message (Leg.Ambiguous) is not
// certified either way: the verdict is ERRORED, with an ambiguous-message
// finding naming each place. That holds whatever the message's method:
// the method is itself a field readers can part on ("METHOD"), and a
// message the twin did not read may be a call to another reader, so "the
// ledger holds the call of alpha" (or holds none) is one reading among
// several, and neither CONFIRMED nor a clean REFUTED may rest on it.
package clientverdict
