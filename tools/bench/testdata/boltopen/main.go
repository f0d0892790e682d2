// Command boltopen is the whole-process floor tools/bench/run.sh measures
// the CLI against: a Go binary that opens a bbolt file read-only (bbolt,
// the version in go.mod), reads one bucket's first key, and exits. Process
// start, the Go runtime's start and the file's open and mmap are what any
// command on that file pays.
//
//	boltopen FILE
package main

import (
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: boltopen FILE")
		os.Exit(2)
	}
	db, err := bolt.Open(os.Args[1], 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "boltopen:", err)
		os.Exit(1)
	}
	buckets := 0
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func([]byte, *bolt.Bucket) error { buckets++; return nil })
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "boltopen:", err)
		os.Exit(1)
	}
	fmt.Println(buckets, "buckets")
}
