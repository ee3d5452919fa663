//go:build !linux

package main

import "github.com/modelcontextprotocol/go-sdk/mcp"

type heldState struct{}

func holdFiles() *heldState { return &heldState{} }

func addHeldTools(s *mcp.Server, h *heldState) {}
