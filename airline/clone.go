package airline

import "slices"

// Clone is a copy of w that its tools can change without changing w:
// users and reservations are copied deeply; flights are shared, as no
// tool writes them (τ-bench's bookings take no seats).
func (w *World) Clone() *World {
	return &World{
		Users:        cloneOrdered(w.Users, (*User).clone),
		Reservations: cloneOrdered(w.Reservations, (*Reservation).clone),
		Flights:      w.Flights,
	}
}

func cloneOrdered[V any](o *Ordered[V], f func(V) V) *Ordered[V] {
	c := &Ordered[V]{Keys: slices.Clone(o.Keys), M: make(map[string]V, len(o.M))}
	for k, v := range o.M {
		c.M[k] = f(v)
	}
	return c
}

func (u *User) clone() *User {
	c := *u
	c.PaymentMethods = cloneOrdered(u.PaymentMethods, (*PaymentMethod).clone)
	c.SavedPassengers = slices.Clone(u.SavedPassengers)
	c.Reservations = slices.Clone(u.Reservations)
	return &c
}

func (p *PaymentMethod) clone() *PaymentMethod {
	c := *p
	if p.Amount != nil {
		a := *p.Amount
		c.Amount = &a
	}
	return &c // Brand and LastFour are never written
}

func (r *Reservation) clone() *Reservation {
	c := *r
	c.Flights = slices.Clone(r.Flights)
	c.Passengers = slices.Clone(r.Passengers)
	c.PaymentHistory = slices.Clone(r.PaymentHistory)
	if r.Status != nil {
		s := *r.Status
		c.Status = &s
	}
	return &c
}
