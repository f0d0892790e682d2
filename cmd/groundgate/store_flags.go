package main

import (
	"flag"
	"fmt"
)

// storeFlags are the flags that choose the store: --db FILE (one
// process's bbolt file, the default) or --store DSN --blobs URL (a
// PostgreSQL + S3 store several servers share, SPEC §17).
type storeFlags struct {
	fs               *flag.FlagSet
	db, store, blobs *string
}

func addStoreFlags(fs *flag.FlagSet, dbUsage string) *storeFlags {
	return &storeFlags{fs: fs,
		db:    fs.String("db", defaultDB, dbUsage),
		store: fs.String("store", "", "PostgreSQL `DSN` (postgres://…) of a store several servers share; with --blobs, instead of --db"),
		blobs: fs.String("blobs", "", "S3 `URL` (s3://BUCKET[/PREFIX]?endpoint=…) of the shared store's blobs, credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; with --store"),
	}
}

// shared reports whether the flags name a shared store, after the
// flags are parsed: a usage error when they name it by halves or together
// with an explicit --db.
func (f *storeFlags) shared() (bool, error) {
	if *f.store == "" && *f.blobs == "" {
		return false, nil
	}
	dbSet := false
	f.fs.Visit(func(fl *flag.Flag) { dbSet = dbSet || fl.Name == "db" })
	switch {
	case dbSet:
		return false, fmt.Errorf("%w: --db and --store/--blobs name two stores; give --db FILE (one server) or --store postgres://… --blobs s3://… (several)", errUsage)
	case *f.store == "" || *f.blobs == "":
		return false, fmt.Errorf("%w: a shared store needs both --store postgres://… and --blobs s3://…", errUsage)
	}
	return true, nil
}
