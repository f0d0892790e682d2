// Command boltstat prints where the bytes of a bbolt file go, for
// tools/bench/registry-edits.sh: the file's size, bbolt's high-water mark
// (the pages below it, in use or free), the free pages, what is in use
// (the high-water mark less the free pages), and per top-level bucket its
// pages and the bytes its keys and values fill in them.
//
//	boltstat FILE
//
// The file is opened for writing (bbolt reads its free-page list only
// then) but not written; nothing else may have it open.
package main

import (
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: boltstat FILE")
		os.Exit(2)
	}
	fi, err := os.Stat(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "boltstat:", err)
		os.Exit(1)
	}
	db, err := bolt.Open(os.Args[1], 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "boltstat:", err)
		os.Exit(1)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		ps := db.Info().PageSize
		st := db.Stats()
		free := int64(st.FreePageN+st.PendingPageN) * int64(ps)
		fmt.Printf("file %d bytes, high water %d bytes (%d pages of %d), free %d bytes (%d pages), in use %d bytes\n",
			fi.Size(), tx.Size(), tx.Size()/int64(ps), ps, free, st.FreePageN+st.PendingPageN, tx.Size()-free)
		fmt.Printf("%-24s %8s %8s %8s %12s %12s %8s\n", "bucket", "keys", "leaf pg", "branch pg", "alloc bytes", "inuse bytes", "fill")
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			alloc := s.BranchAlloc + s.LeafAlloc
			inuse := s.BranchInuse + s.LeafInuse
			fill := 0.0
			if alloc > 0 {
				fill = float64(inuse) / float64(alloc)
			}
			fmt.Printf("%-24s %8d %8d %8d %12d %12d %7.0f%%\n", name, s.KeyN, s.LeafPageN+s.LeafOverflowN, s.BranchPageN+s.BranchOverflowN, alloc, inuse, 100*fill)
			return nil
		})
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "boltstat:", err)
		os.Exit(1)
	}
}
