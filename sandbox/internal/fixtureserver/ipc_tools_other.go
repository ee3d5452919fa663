//go:build !linux

package main

import "github.com/modelcontextprotocol/go-sdk/mcp"

// The "ipc" set needs Linux (message queues, System V IPC, /dev/shm).
func addIPCTools(s *mcp.Server) {}

func mapShm() {}
