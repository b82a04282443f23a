package main

import "syscall"

// freeBytes is the space left for ship (not root) on the file system
// holding path.
func freeBytes(path string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	// The field types differ between systems: convert both.
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
