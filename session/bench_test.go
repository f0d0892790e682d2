package session_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/groundgate/groundgate/session"
)

// BenchmarkAppendCall records a read of a reservation in a session whose
// state already holds 100 of them (~30 KiB): one transaction with its
// fsync, the state decoded, grown and written back.
func BenchmarkAppendCall(b *testing.B) {
	ctx := context.Background()
	d := mustOpenStore(b, session.Options{})
	s := mustCreate(b, d.st, "bench").Session
	res := func(i int) string {
		return fmt.Sprintf(`{"reservation_id": "R%05d", "cabin": "economy", "flights": [{"flight_number": "HAT%03d", "date": "2024-05-20", "price": 120}], "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}], "payment_history": [{"payment_id": "credit_card_4421486", "amount": 240}]}`, i, i%1000)
	}
	for i := range 100 {
		if _, err := d.st.AppendCall(ctx, s.ID, readCall(b, fmt.Sprint(i), fmt.Sprintf("R%05d", i), res(i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := d.st.AppendCall(ctx, s.ID, readCall(b, fmt.Sprint("b", i), fmt.Sprintf("R%05d", i%100), res(i))); err != nil {
			b.Fatal(err)
		}
	}
}
