// Package gate is the CI gate as one call: it scans a server, gives the
// verdict, writes the reports and says whether the gate fails. Commands
// (scan, and later bulk) parse their flags into Options and call Run.
package gate
