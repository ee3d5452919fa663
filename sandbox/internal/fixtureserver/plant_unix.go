//go:build unix

package main

import "syscall"

func chmodBits(p string, m uint32) error { return syscall.Chmod(p, m) }
