package gateway

import "time"

// Limits bound what one upstream may cost the server. The zero value of
// each field means its default (below).
type Limits struct {
	// CallTimeout bounds one forwarded call, from the request sent to the
	// answer read (default 30s). Past it the call fails with ErrTimeout
	// and the upstream is sent notifications/cancelled.
	CallTimeout time.Duration
	// ConnectTimeout bounds connecting: starting the process or reaching
	// the URL, initialize, and the first tool list (default 30s).
	ConnectTimeout time.Duration
	// MaxConcurrent is the number of calls one upstream may have in
	// flight (default 8).
	MaxConcurrent int
	// QueueWait is how long a call waits for one of those slots before
	// failing with ErrBusy (default 5s, and never past the caller's
	// context); a negative value refuses at once.
	QueueWait time.Duration
	// MaxResultBytes bounds a call's result in RFC 8785 form (default
	// 4 MiB): larger is ErrResultTooLarge.
	MaxResultBytes int
	// MaxMessageBytes bounds one JSON-RPC message read from the upstream
	// (default 16 MiB): a stdio line, an HTTP response body, an SSE event.
	// A larger one is refused unread; the memory an upstream can make the
	// server hold is about this much per connection.
	MaxMessageBytes int
	// MaxTools bounds the tools one upstream may list (default 10,000);
	// MaxToolListBytes the bytes of all its list pages (default 64 MiB).
	// More is ErrToolList.
	MaxTools         int
	MaxToolListBytes int
	// BackoffMin and BackoffMax bound the wait between reconnection
	// attempts, which doubles from BackoffMin up to BackoffMax (defaults
	// 250ms and 30s).
	BackoffMin, BackoffMax time.Duration
	// StableAfter is how long a session must have lasted for the backoff
	// to start again from BackoffMin (default 10s): an upstream that
	// crashes right after connecting is restarted ever more slowly.
	StableAfter time.Duration
	// StopGrace is how long a stdio upstream has to exit after its stdin
	// is closed, and again after SIGTERM, before it is killed (default 2s).
	StopGrace time.Duration
}

// The defaults of Limits.
const (
	DefaultCallTimeout      = 30 * time.Second
	DefaultConnectTimeout   = 30 * time.Second
	DefaultMaxConcurrent    = 8
	DefaultQueueWait        = 5 * time.Second
	DefaultMaxResultBytes   = 4 << 20
	DefaultMaxMessageBytes  = 16 << 20
	DefaultMaxTools         = 10_000
	DefaultMaxToolListBytes = 64 << 20
	DefaultBackoffMin       = 250 * time.Millisecond
	DefaultBackoffMax       = 30 * time.Second
	DefaultStableAfter      = 10 * time.Second
	DefaultStopGrace        = 2 * time.Second
)

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	set := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	seti := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.CallTimeout, DefaultCallTimeout)
	set(&l.ConnectTimeout, DefaultConnectTimeout)
	set(&l.QueueWait, DefaultQueueWait)
	set(&l.BackoffMin, DefaultBackoffMin)
	set(&l.BackoffMax, DefaultBackoffMax)
	set(&l.StableAfter, DefaultStableAfter)
	set(&l.StopGrace, DefaultStopGrace)
	seti(&l.MaxConcurrent, DefaultMaxConcurrent)
	seti(&l.MaxResultBytes, DefaultMaxResultBytes)
	seti(&l.MaxMessageBytes, DefaultMaxMessageBytes)
	seti(&l.MaxTools, DefaultMaxTools)
	seti(&l.MaxToolListBytes, DefaultMaxToolListBytes)
	if l.BackoffMax < l.BackoffMin {
		l.BackoffMax = l.BackoffMin
	}
	return l
}

// backoff is the wait before reconnection attempt n (0 first).
func (l Limits) backoff(n int) time.Duration {
	d := l.BackoffMin
	for i := 0; i < n && d < l.BackoffMax; i++ {
		d *= 2
	}
	return min(d, l.BackoffMax)
}
