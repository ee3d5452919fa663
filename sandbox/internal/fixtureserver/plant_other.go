//go:build !unix

package main

import (
	"io/fs"
	"os"
)

func chmodBits(p string, m uint32) error { return os.Chmod(p, fs.FileMode(m&0o777)) }
