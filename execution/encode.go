package execution

import (
	"context"
	"sync"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/series"
)

// Artifacts are series tables in the canonical binary form of package
// series (little-endian float64 columns over an int32 day index, NA as
// one NaN bit pattern; docs/execution.md): fixed-width, so numpy reads
// them with one frombuffer call, and a pure function of the values, so an
// artifact's digest is too. The digest is BLAKE3 of that canonical form;
// the store keeps it packed.
//
//	pnl:     one column "pnl"
//	weights: the traded columns, in frame order

// dateDays converts a frame's dates once per execution.
func dateDays(f *frame.Frame) []int32 {
	out := make([]int32, f.Len())
	for i, d := range f.Dates() {
		out[i] = int32(d)
	}
	return out
}

// buffers are a worker's encoding buffers, reused from morphism to
// morphism.
type buffers struct {
	enc, scratch []byte
	series       *seriesPool // node values, when the grid shares none (nil: allocate)
}

// artifactsOf encodes res's P&L and weights, digests them and, when sink
// is not nil, hands them to it prepared for storage: weights as a recipe
// when deriv says how (see derive.go), packed otherwise. The canonical
// bytes are dropped (the worker's buffers reused) as soon as each is
// digested and stored, so a worker holds at most one encoding at a time.
//
// When stage is not nil, the artifacts' own blobs are prepared into it
// rather than stored, for the caller to commit once the morphism's last
// postcondition holds (inputs shared by the grid's recipes are stored
// at once: they belong to no one morphism).
func artifactsOf(ctx context.Context, bufs *buffers, days []int32, res *kernel.Result, deriv *weightsDerivation, sink *blobSink, stage *[]artifacts.Blob) ([]Artifact, error) {
	tables := []struct {
		name string
		t    series.Table
	}{
		{"pnl", series.Table{Dates: days, Names: []string{"pnl"}, Cols: [][]float64{res.PnL}}},
		{"weights", series.Table{Dates: days, Names: res.Assets, Cols: res.Weights}},
	}
	out := make([]Artifact, 0, len(tables))
	for _, tb := range tables {
		var err error
		if bufs.enc, err = series.Encode(bufs.enc[:0], &tb.t); err != nil {
			return nil, err
		}
		out = append(out, Artifact{Name: tb.name, Digest: hashing.SumBLAKE3(bufs.enc), Bytes: len(bufs.enc)})
		if sink == nil {
			continue
		}
		stored := false
		if tb.name == "weights" && deriv != nil {
			if stored, err = sink.storeDerived(ctx, *deriv, bufs.enc, &bufs.scratch, stage); err != nil {
				return nil, err
			}
		}
		if !stored {
			if err := sink.put(ctx, bufs.enc, stage); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// blobSink stores artifacts while the grid runs: workers prepare (hash
// and pack) in parallel, and a batch is written in one transaction once
// it holds batchBytes, so memory stays bounded whatever the grid's size
// and a large grid costs a handful of commits, not one per artifact.
type blobSink struct {
	arts       *artifacts.Store
	batchBytes int

	mu      sync.Mutex
	pending []artifacts.Blob
	size    int
	nodes   map[string]*nodeBlob // node values stored for recipes, by content key
}

const defaultBatchBytes = 16 << 20

func newBlobSink(arts *artifacts.Store) *blobSink {
	return &blobSink{arts: arts, batchBytes: defaultBatchBytes, nodes: map[string]*nodeBlob{}}
}

// add prepares data (which the caller may reuse afterwards) and writes
// the pending batch when it is full.
func (s *blobSink) add(ctx context.Context, data []byte) error {
	b, err := s.arts.Prepare(data)
	if err != nil {
		return err
	}
	return s.addPrepared(ctx, b)
}

// put stores data, or prepares it into stage when stage is not nil.
func (s *blobSink) put(ctx context.Context, data []byte, stage *[]artifacts.Blob) error {
	if stage == nil {
		return s.add(ctx, data)
	}
	b, err := s.arts.Prepare(data)
	if err != nil {
		return err
	}
	*stage = append(*stage, b)
	return nil
}

func (s *blobSink) addPrepared(ctx context.Context, b artifacts.Blob) error {
	s.mu.Lock()
	s.pending = append(s.pending, b)
	s.size += b.StoredSize()
	var batch []artifacts.Blob
	if s.size >= s.batchBytes {
		batch, s.pending, s.size = s.pending, nil, 0
	}
	s.mu.Unlock()
	return s.write(ctx, batch)
}

// node stores a node value shared by the grid's morphisms once, keyed by
// the node's content key, and returns its digest.
func (s *blobSink) node(ctx context.Context, key string, t *series.Table) (hashing.Digest, error) {
	s.mu.Lock()
	e := s.nodes[key]
	if e == nil {
		e = &nodeBlob{}
		s.nodes[key] = e
	}
	s.mu.Unlock()
	e.once.Do(func() {
		var b []byte
		if b, e.err = series.Encode(nil, t); e.err != nil {
			return
		}
		e.digest = hashing.SumBLAKE3(b)
		e.err = s.add(ctx, b)
	})
	return e.digest, e.err
}

type nodeBlob struct {
	once   sync.Once
	digest hashing.Digest
	err    error
}

// flush writes what is pending.
func (s *blobSink) flush(ctx context.Context) error {
	s.mu.Lock()
	batch := s.pending
	s.pending, s.size = nil, 0
	s.mu.Unlock()
	return s.write(ctx, batch)
}

func (s *blobSink) write(ctx context.Context, batch []artifacts.Blob) error {
	if len(batch) == 0 {
		return nil
	}
	_, err := s.arts.PutBlobs(ctx, batch)
	return err
}
