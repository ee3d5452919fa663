// Package gate is the CI gate as one call: it scans a server, gives the
// verdict, writes the reports and says whether the gate fails.
// `mcpsandbox scan` parses its flags into Options and calls Run; bulk
// scans each package through it (ci/bulk's GateScanner).
package gate
