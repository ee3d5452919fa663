// Package jsonfile reads and writes the small versioned JSON files the CI
// gate keeps in a repository (baselines, contracts): indented, with a
// final newline, refused when their version is not one expected.
package jsonfile
