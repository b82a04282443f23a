//go:build !linux

package tools

import (
	"context"
	"errors"
)

// bwrapLayout is empty off Linux: there is no sandbox to lay out.
type bwrapLayout struct{}

// errNoBwrap is why there is no sandbox off Linux: bubblewrap builds on
// Linux namespaces.
var errNoBwrap = errors.New("the bwrap sandbox needs Linux")

func findBwrap(string) (string, error) { return "", errNoBwrap }

func probeBwrap(context.Context, *sandbox) (bwrapLayout, string, error) {
	return bwrapLayout{}, "", errNoBwrap
}

// argv is never called off Linux: the sandbox is never active.
func (s *sandbox) argv(command string) []string { return []string{"/bin/sh", "-c", command} }
