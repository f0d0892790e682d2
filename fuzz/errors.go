package fuzz

import (
	"fmt"

	"github.com/groundgate/groundgate/registry"
)

// ErrPoisoned is returned (wrapped) by Screen for an entry refused for its
// discovery text. It is a case of registry.ErrInvalidEntry, whose kind and
// problem it has (invalid-entry).
var ErrPoisoned = fmt.Errorf("discovery text addresses agents: %w", registry.ErrInvalidEntry)
