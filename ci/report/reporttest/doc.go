// Package reporttest gives tests a sample report and validates reports
// against the published JSON Schema.
package reporttest
