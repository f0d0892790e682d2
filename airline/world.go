package airline

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
)

// World is τ-bench's airline database in memory: users, reservations and
// flights, each kept in the order of its file (Python's dict order, which
// search results and digests follow), changed by the write tools.
type World struct {
	Users        *Ordered[*User]
	Reservations *Ordered[*Reservation]
	Flights      *Ordered[*Flight]
}

// Ordered is a dict of Python: values by key, iterated in insertion order.
type Ordered[V any] struct {
	Keys []string
	M    map[string]V
}

// NewOrdered is an empty Ordered.
func NewOrdered[V any]() *Ordered[V] { return &Ordered[V]{M: map[string]V{}} }

// Get is the value of k.
func (o *Ordered[V]) Get(k string) (V, bool) {
	v, ok := o.M[k]
	return v, ok
}

// Set sets k's value, appending k when it is new.
func (o *Ordered[V]) Set(k string, v V) {
	if _, ok := o.M[k]; !ok {
		o.Keys = append(o.Keys, k)
	}
	o.M[k] = v
}

// Delete removes k.
func (o *Ordered[V]) Delete(k string) {
	if _, ok := o.M[k]; !ok {
		return
	}
	delete(o.M, k)
	for i, x := range o.Keys {
		if x == k {
			o.Keys = append(o.Keys[:i:i], o.Keys[i+1:]...)
			break
		}
	}
}

// UnmarshalJSON decodes an object strictly, keeping its key order.
func (o *Ordered[V]) UnmarshalJSON(data []byte) error {
	*o = Ordered[V]{M: map[string]V{}}
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return fmt.Errorf("want an object, not %s", tok.Kind())
	}
	for dec.PeekKind() != '}' {
		kt, err := dec.ReadToken()
		if err != nil {
			return err
		}
		key := kt.String()
		raw, err := dec.ReadValue()
		if err != nil {
			return err
		}
		var v V
		if err := hashing.DecodePart(raw, &v); err != nil {
			return fmt.Errorf("%q: %w", key, err)
		}
		if _, dup := o.M[key]; dup {
			return fmt.Errorf("duplicate key %q", key)
		}
		o.Set(key, v)
	}
	return nil
}

// User is one of users.json's users.
type User struct {
	Name            Name                     `json:"name"`
	Address         Address                  `json:"address"`
	Email           string                   `json:"email"`
	DOB             string                   `json:"dob"`
	PaymentMethods  *Ordered[*PaymentMethod] `json:"payment_methods"`
	SavedPassengers []Passenger              `json:"saved_passengers"`
	Membership      string                   `json:"membership"`
	Reservations    []string                 `json:"reservations"`
}

// Name is a user's name.
type Name struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
}

// Address is a user's address.
type Address struct {
	Address1 string `json:"address1"`
	Address2 string `json:"address2"`
	City     string `json:"city"`
	Country  string `json:"country"`
	State    string `json:"state"`
	Zip      string `json:"zip"`
}

// PaymentMethod is a credit card (brand, last four digits), a gift card
// or a certificate (an amount); its members are written in that order.
type PaymentMethod struct {
	Source   string  `json:"source"`
	Brand    *string `json:"brand,omitempty"`
	LastFour *string `json:"last_four,omitempty"`
	Amount   *Num    `json:"amount,omitempty"`
	ID       string  `json:"id"`
}

// Passenger is a reservation's passenger or a user's saved one.
type Passenger struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	DOB       string `json:"dob"`
}

// Reservation is one of reservations.json's reservations.
type Reservation struct {
	ReservationID   string              `json:"reservation_id"`
	UserID          string              `json:"user_id"`
	Origin          string              `json:"origin"`
	Destination     string              `json:"destination"`
	FlightType      string              `json:"flight_type"`
	Cabin           string              `json:"cabin"`
	Flights         []ReservationFlight `json:"flights"`
	Passengers      []Passenger         `json:"passengers"`
	PaymentHistory  []Payment           `json:"payment_history"`
	CreatedAt       string              `json:"created_at"`
	TotalBaggages   int64               `json:"total_baggages"`
	NonfreeBaggages int64               `json:"nonfree_baggages"`
	Insurance       string              `json:"insurance"`
	// Status is absent until cancel_reservation sets it to "cancelled".
	Status *string `json:"status,omitempty"`
}

// ReservationFlight is one segment of a reservation. The database writes
// its members origin, destination, flight_number, date, price; a segment
// the tools wrote has them as flight_number, date, price, origin,
// destination (Booked).
type ReservationFlight struct {
	Origin       string `json:"origin"`
	Destination  string `json:"destination"`
	FlightNumber string `json:"flight_number"`
	Date         string `json:"date"`
	Price        int64  `json:"price"`
	Booked       bool   `json:"-"`
}

// Payment is a line of a reservation's payment history (a refund has a
// negative amount).
type Payment struct {
	PaymentID string `json:"payment_id"`
	Amount    Num    `json:"amount"`
}

// Flight is one of flights.json's flights: a route flown daily.
type Flight struct {
	FlightNumber              string                `json:"flight_number"`
	Origin                    string                `json:"origin"`
	Destination               string                `json:"destination"`
	ScheduledDepartureTimeEST string                `json:"scheduled_departure_time_est"`
	ScheduledArrivalTimeEST   string                `json:"scheduled_arrival_time_est"`
	Dates                     *Ordered[*FlightDate] `json:"dates"`
}

// FlightDate is a flight on one date: landed, cancelled, flying, delayed,
// on time or available (with seats and prices per cabin).
type FlightDate struct {
	Status                    string  `json:"status"`
	ActualDepartureTimeEST    *string `json:"actual_departure_time_est,omitempty"`
	EstimatedDepartureTimeEST *string `json:"estimated_departure_time_est,omitempty"`
	ActualArrivalTimeEST      *string `json:"actual_arrival_time_est,omitempty"`
	EstimatedArrivalTimeEST   *string `json:"estimated_arrival_time_est,omitempty"`
	AvailableSeats            *Cabins `json:"available_seats,omitempty"`
	Prices                    *Cabins `json:"prices,omitempty"`
}

// Cabins is a number per cabin.
type Cabins struct {
	BasicEconomy int64 `json:"basic_economy"`
	Economy      int64 `json:"economy"`
	Business     int64 `json:"business"`
}

// Get is the cabin's number; ok is false for a name that is no cabin
// (where τ-bench's dict lookup raises KeyError).
func (c *Cabins) Get(cabin string) (n int64, ok bool) {
	switch cabin {
	case "basic_economy":
		return c.BasicEconomy, true
	case "economy":
		return c.Economy, true
	case "business":
		return c.Business, true
	}
	return 0, false
}

// DBFiles are the world's files in a --db directory.
var DBFiles = [...]string{"users.json", "reservations.json", "flights.json"}

// Load reads the world from dir's users.json, reservations.json and
// flights.json (τ-bench's db), strictly: a member the types lack is an
// error.
func Load(dir string) (*World, error) {
	var raw [3][]byte
	for i, name := range DBFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		raw[i] = b
	}
	return Parse(raw[0], raw[1], raw[2])
}

// Parse is Load from the three files' bytes.
func Parse(users, reservations, flights []byte) (*World, error) {
	w := &World{}
	for _, f := range []struct {
		name string
		data []byte
		v    any
	}{
		{"users.json", users, &w.Users},
		{"reservations.json", reservations, &w.Reservations},
		{"flights.json", flights, &w.Flights},
	} {
		if err := hashing.DecodeStrict(f.data, f.v); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if w.Users == nil || w.Reservations == nil || w.Flights == nil {
		return nil, fmt.Errorf("airline: a db file is null")
	}
	return w, nil
}

// Digest is oracle.json's digest of the world: "sha256:" and the hex
// SHA-256 of {"flights", "reservations", "users"} as Python's
// json.dumps(db, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
func (w *World) Digest() string {
	sum := sha256.Sum256(DumpsSorted(w.Value()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Value is the world as a JSON value in Python's member order.
func (w *World) Value() Obj {
	return Obj{
		{"users", orderedValue(w.Users, (*User).Value)},
		{"reservations", orderedValue(w.Reservations, (*Reservation).Value)},
		{"flights", orderedValue(w.Flights, (*Flight).Value)},
	}
}

func orderedValue[V any](o *Ordered[V], f func(V) Obj) Obj {
	out := make(Obj, 0, len(o.Keys))
	for _, k := range o.Keys {
		out = append(out, Member{k, f(o.M[k])})
	}
	return out
}

// Value is u as τ-bench writes it.
func (u *User) Value() Obj {
	saved := make([]any, len(u.SavedPassengers))
	for i, p := range u.SavedPassengers {
		saved[i] = p.Value()
	}
	res := make([]any, len(u.Reservations))
	for i, r := range u.Reservations {
		res[i] = r
	}
	return Obj{
		{"name", Obj{{"first_name", u.Name.FirstName}, {"last_name", u.Name.LastName}}},
		{"address", Obj{
			{"address1", u.Address.Address1}, {"address2", u.Address.Address2},
			{"city", u.Address.City}, {"country", u.Address.Country},
			{"state", u.Address.State}, {"zip", u.Address.Zip},
		}},
		{"email", u.Email},
		{"dob", u.DOB},
		{"payment_methods", orderedValue(u.PaymentMethods, (*PaymentMethod).Value)},
		{"saved_passengers", saved},
		{"membership", u.Membership},
		{"reservations", res},
	}
}

// Value is p as τ-bench writes it.
func (p *PaymentMethod) Value() Obj {
	o := Obj{{"source", p.Source}}
	if p.Brand != nil {
		o = append(o, Member{"brand", *p.Brand})
	}
	if p.LastFour != nil {
		o = append(o, Member{"last_four", *p.LastFour})
	}
	if p.Amount != nil {
		o = append(o, Member{"amount", *p.Amount})
	}
	return append(o, Member{"id", p.ID})
}

// Value is p as τ-bench writes it.
func (p Passenger) Value() Obj {
	return Obj{{"first_name", p.FirstName}, {"last_name", p.LastName}, {"dob", p.DOB}}
}

// Value is r as τ-bench writes it.
func (r *Reservation) Value() Obj {
	flights := make([]any, len(r.Flights))
	for i, f := range r.Flights {
		flights[i] = f.Value()
	}
	pax := make([]any, len(r.Passengers))
	for i, p := range r.Passengers {
		pax[i] = p.Value()
	}
	pay := make([]any, len(r.PaymentHistory))
	for i, p := range r.PaymentHistory {
		pay[i] = Obj{{"payment_id", p.PaymentID}, {"amount", p.Amount}}
	}
	o := Obj{
		{"reservation_id", r.ReservationID},
		{"user_id", r.UserID},
		{"origin", r.Origin},
		{"destination", r.Destination},
		{"flight_type", r.FlightType},
		{"cabin", r.Cabin},
		{"flights", flights},
		{"passengers", pax},
		{"payment_history", pay},
		{"created_at", r.CreatedAt},
		{"total_baggages", r.TotalBaggages},
		{"nonfree_baggages", r.NonfreeBaggages},
		{"insurance", r.Insurance},
	}
	if r.Status != nil {
		o = append(o, Member{"status", *r.Status})
	}
	return o
}

// Value is f in its member order (see ReservationFlight).
func (f ReservationFlight) Value() Obj {
	if f.Booked {
		return Obj{{"flight_number", f.FlightNumber}, {"date", f.Date}, {"price", f.Price}, {"origin", f.Origin}, {"destination", f.Destination}}
	}
	return Obj{{"origin", f.Origin}, {"destination", f.Destination}, {"flight_number", f.FlightNumber}, {"date", f.Date}, {"price", f.Price}}
}

// header is f's members but its dates, as the searches copy them.
func (f *Flight) header() Obj {
	return Obj{
		{"flight_number", f.FlightNumber},
		{"origin", f.Origin},
		{"destination", f.Destination},
		{"scheduled_departure_time_est", f.ScheduledDepartureTimeEST},
		{"scheduled_arrival_time_est", f.ScheduledArrivalTimeEST},
	}
}

// Value is f as τ-bench writes it.
func (f *Flight) Value() Obj {
	return append(f.header(), Member{"dates", orderedValue(f.Dates, (*FlightDate).Value)})
}

// Value is d as τ-bench writes it.
func (d *FlightDate) Value() Obj {
	o := Obj{{"status", d.Status}}
	for _, m := range []struct {
		k string
		v *string
	}{
		{"actual_departure_time_est", d.ActualDepartureTimeEST},
		{"estimated_departure_time_est", d.EstimatedDepartureTimeEST},
		{"actual_arrival_time_est", d.ActualArrivalTimeEST},
		{"estimated_arrival_time_est", d.EstimatedArrivalTimeEST},
	} {
		if m.v != nil {
			o = append(o, Member{m.k, *m.v})
		}
	}
	if d.AvailableSeats != nil {
		o = append(o, Member{"available_seats", d.AvailableSeats.Value()})
	}
	if d.Prices != nil {
		o = append(o, Member{"prices", d.Prices.Value()})
	}
	return o
}

// Value is c as τ-bench writes it.
func (c *Cabins) Value() Obj {
	return Obj{{"basic_economy", c.BasicEconomy}, {"economy", c.Economy}, {"business", c.Business}}
}
