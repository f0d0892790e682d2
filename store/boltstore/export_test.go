package boltstore

// Commits is how many batch commits s has begun.
func (s *Store) Commits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits
}
