package airline

import (
	"fmt"
	"strconv"
	"strings"
)

// Now is the world's fixed clock, as policy.md states it ("The current
// time is 2024-05-15 15:00:00 EST"); book_reservation stamps created_at
// with it.
const Now = "2024-05-15T15:00:00"

// keyError is what a Python dict lookup of a missing key raises, as
// τ-bench's environment reports an exception: "Error: 'key'".
func keyError(key string) string { return "Error: " + pyRepr(key) }

// pyRepr is Python's repr of a string (ASCII printable strings only are
// exact; others are quoted the same way).
func pyRepr(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	var b strings.Builder
	b.WriteString(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case string(r) == q:
			b.WriteString(`\` + q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(q)
	return b.String()
}

// GetUserDetails is get_user_details.
func (w *World) GetUserDetails(userID string) string {
	u, ok := w.Users.Get(userID)
	if !ok {
		return "Error: user not found"
	}
	return Dumps(u.Value())
}

// GetReservationDetails is get_reservation_details (whose miss says
// "user not found", as τ-bench's does).
func (w *World) GetReservationDetails(reservationID string) string {
	r, ok := w.Reservations.Get(reservationID)
	if !ok {
		return "Error: user not found"
	}
	return Dumps(r.Value())
}

var airports = Obj{
	{"SFO", "San Francisco"}, {"JFK", "New York"}, {"LAX", "Los Angeles"},
	{"ORD", "Chicago"}, {"DFW", "Dallas"}, {"DEN", "Denver"}, {"SEA", "Seattle"},
	{"ATL", "Atlanta"}, {"MIA", "Miami"}, {"BOS", "Boston"}, {"PHX", "Phoenix"},
	{"IAH", "Houston"}, {"LAS", "Las Vegas"}, {"MCO", "Orlando"}, {"EWR", "Newark"},
	{"CLT", "Charlotte"}, {"MSP", "Minneapolis"}, {"DTW", "Detroit"},
	{"PHL", "Philadelphia"}, {"LGA", "LaGuardia"},
}

// ListAllAirports is list_all_airports.
func (w *World) ListAllAirports() string { return Dumps(airports) }

// SearchDirectFlight is search_direct_flight: the flights from origin to
// destination available on date, in the database's order.
func (w *World) SearchDirectFlight(origin, destination, date string) string {
	results := []any{}
	for _, k := range w.Flights.Keys {
		f := w.Flights.M[k]
		if f.Origin != origin || f.Destination != destination {
			continue
		}
		if d, ok := f.Dates.Get(date); ok && d.Status == "available" {
			results = append(results, append(f.header(), d.Value()...))
		}
	}
	return Dumps(results)
}

// SearchOnestopFlight is search_onestop_flight, with τ-bench's quirks:
// the second leg's date is "2024-05-" and the day plus one, unpadded,
// when the first arrives the next day, and the second leg's status and
// seats are those of the first leg's date.
func (w *World) SearchOnestopFlight(origin, destination, date string) string {
	results := []any{}
	for _, k1 := range w.Flights.Keys {
		f1 := w.Flights.M[k1]
		if f1.Origin != origin {
			continue
		}
		for _, k2 := range w.Flights.Keys {
			f2 := w.Flights.M[k2]
			if f2.Destination != destination || f1.Destination != f2.Origin {
				continue
			}
			date2 := date
			if strings.Contains(f1.ScheduledArrivalTimeEST, "+1") {
				tail := date
				if len(tail) > 2 {
					tail = tail[len(tail)-2:]
				}
				day, err := strconv.Atoi(strings.TrimSpace(tail))
				if err != nil {
					return "Error: invalid literal for int() with base 10: " + pyRepr(tail)
				}
				date2 = "2024-05-" + strconv.Itoa(day+1)
			}
			if f1.ScheduledArrivalTimeEST > f2.ScheduledDepartureTimeEST {
				continue
			}
			d1, ok1 := f1.Dates.Get(date)
			d2, ok2 := f2.Dates.Get(date2)
			if !ok1 || !ok2 || d1.Status != "available" || d2.Status != "available" {
				continue
			}
			d2same, ok := f2.Dates.Get(date)
			if !ok {
				return keyError(date)
			}
			r1 := append(append(f1.header(), d1.Value()...), Member{"date", date})
			r2 := append(append(f2.header(), d2same.Value()...), Member{"date", date2})
			results = append(results, []any{r1, r2})
		}
	}
	return Dumps(results)
}

// Think is think: it answers nothing.
func (w *World) Think(string) string { return "" }

// TransferToHumanAgents is transfer_to_human_agents.
func (w *World) TransferToHumanAgents(string) string { return "Transfer successful" }

// FlightRef is a flight on a date, as the write tools take it.
type FlightRef struct {
	FlightNumber string `json:"flight_number"`
	Date         string `json:"date"`
}

// Booking is book_reservation's arguments.
type Booking struct {
	UserID          string      `json:"user_id"`
	Origin          string      `json:"origin"`
	Destination     string      `json:"destination"`
	FlightType      string      `json:"flight_type"`
	Cabin           string      `json:"cabin"`
	Flights         []FlightRef `json:"flights"`
	Passengers      []Passenger `json:"passengers"`
	PaymentMethods  []Payment   `json:"payment_methods"`
	TotalBaggages   int64       `json:"total_baggages"`
	NonfreeBaggages int64       `json:"nonfree_baggages"`
	Insurance       string      `json:"insurance"`
}

// segment prices f for n passengers in cabin, as book_reservation and
// update_reservation_flights do for a flight not already held; msg is
// τ-bench's error.
func (w *World) segment(f FlightRef, cabin string, n int) (seg ReservationFlight, msg string) {
	fl, ok := w.Flights.Get(f.FlightNumber)
	if !ok {
		return seg, fmt.Sprintf("Error: flight %s not found", f.FlightNumber)
	}
	d, ok := fl.Dates.Get(f.Date)
	if !ok {
		return seg, fmt.Sprintf("Error: flight %s not found on date %s", f.FlightNumber, f.Date)
	}
	if d.Status != "available" {
		return seg, fmt.Sprintf("Error: flight %s not available on date %s", f.FlightNumber, f.Date)
	}
	if d.AvailableSeats == nil {
		return seg, keyError("available_seats")
	}
	seats, ok := d.AvailableSeats.Get(cabin)
	if !ok {
		return seg, keyError(cabin)
	}
	if seats < int64(n) {
		return seg, fmt.Sprintf("Error: not enough seats on flight %s", f.FlightNumber)
	}
	if d.Prices == nil {
		return seg, keyError("prices")
	}
	price, ok := d.Prices.Get(cabin)
	if !ok {
		return seg, keyError(cabin)
	}
	return ReservationFlight{
		FlightNumber: f.FlightNumber, Date: f.Date, Price: price,
		Origin: fl.Origin, Destination: fl.Destination, Booked: true,
	}, ""
}

// BookReservation is book_reservation: the new reservation is HATHAT,
// else HATHAU, else HATHAV (replaced if it exists), created at Now. It
// checks the flights, seats, payment methods, balances and that the
// payments add up to the price; it takes no seats from the flights.
func (w *World) BookReservation(b Booking) string {
	user, ok := w.Users.Get(b.UserID)
	if !ok {
		return "Error: user not found"
	}
	id := "HATHAT"
	if _, ok := w.Reservations.Get(id); ok {
		id = "HATHAU"
		if _, ok := w.Reservations.Get(id); ok {
			id = "HATHAV"
		}
	}
	n := len(b.Passengers)
	var total int64
	flights := make([]ReservationFlight, 0, len(b.Flights))
	for _, f := range b.Flights {
		seg, msg := w.segment(f, b.Cabin, n)
		if msg != "" {
			return msg
		}
		flights = append(flights, seg)
		total += seg.Price * int64(n)
	}
	if b.Insurance == "yes" {
		total += 30 * int64(n)
	}
	total += 50 * b.NonfreeBaggages
	paid := Int(0)
	for _, p := range b.PaymentMethods {
		pm, ok := user.PaymentMethods.Get(p.PaymentID)
		if !ok {
			return fmt.Sprintf("Error: payment method %s not found", p.PaymentID)
		}
		if pm.Source == "gift_card" || pm.Source == "certificate" {
			if pm.Amount == nil {
				return keyError("amount")
			}
			if pm.Amount.Less(p.Amount) {
				return fmt.Sprintf("Error: not enough balance in payment method %s", p.PaymentID)
			}
		}
	}
	for _, p := range b.PaymentMethods {
		paid = paid.Add(p.Amount)
	}
	if !paid.Equal(Int(total)) {
		return fmt.Sprintf("Error: payment amount does not add up, total price is %d, but paid %s", total, paid)
	}
	for _, p := range b.PaymentMethods {
		pm, ok := user.PaymentMethods.Get(p.PaymentID)
		if !ok { // a certificate named twice: deleted by the first
			return keyError(p.PaymentID)
		}
		switch pm.Source {
		case "gift_card":
			left := pm.Amount.Sub(p.Amount)
			pm.Amount = &left
		case "certificate":
			user.PaymentMethods.Delete(p.PaymentID)
		}
	}
	r := &Reservation{
		ReservationID:   id,
		UserID:          b.UserID,
		Origin:          b.Origin,
		Destination:     b.Destination,
		FlightType:      b.FlightType,
		Cabin:           b.Cabin,
		Flights:         flights,
		Passengers:      b.Passengers,
		PaymentHistory:  b.PaymentMethods,
		CreatedAt:       Now,
		TotalBaggages:   b.TotalBaggages,
		NonfreeBaggages: b.NonfreeBaggages,
		Insurance:       b.Insurance,
	}
	if r.Passengers == nil {
		r.Passengers = []Passenger{}
	}
	if r.PaymentHistory == nil {
		r.PaymentHistory = []Payment{}
	}
	w.Reservations.Set(id, r)
	user.Reservations = append(user.Reservations, id)
	return Dumps(r.Value())
}

// CancelReservation is cancel_reservation: every payment refunded (a line
// of the opposite amount) and the status "cancelled", whatever the
// reservation's flights or the policy.
func (w *World) CancelReservation(reservationID string) string {
	r, ok := w.Reservations.Get(reservationID)
	if !ok {
		return "Error: reservation not found"
	}
	refunds := make([]Payment, 0, len(r.PaymentHistory))
	for _, p := range r.PaymentHistory {
		refunds = append(refunds, Payment{PaymentID: p.PaymentID, Amount: p.Amount.Neg()})
	}
	r.PaymentHistory = append(r.PaymentHistory, refunds...)
	cancelled := "cancelled"
	r.Status = &cancelled
	return Dumps(r.Value())
}

// paymentOf is the payment method paymentID of r's user, or τ-bench's
// error: not found, or a certificate (which updates cannot use).
func (w *World) paymentOf(r *Reservation, paymentID string) (*PaymentMethod, string) {
	u, ok := w.Users.Get(r.UserID)
	if !ok {
		return nil, keyError(r.UserID)
	}
	pm, ok := u.PaymentMethods.Get(paymentID)
	if !ok {
		return nil, "Error: payment method not found"
	}
	if pm.Source == "certificate" {
		return nil, "Error: certificate cannot be used to update reservation"
	}
	return pm, ""
}

// charge takes total from pm (a gift card's balance; other sources
// are not tracked) and records it in r's history unless it is 0.
func charge(r *Reservation, pm *PaymentMethod, paymentID string, total int64) {
	if pm.Source == "gift_card" {
		left := pm.Amount.Sub(Int(total))
		pm.Amount = &left
	}
	if total != 0 {
		r.PaymentHistory = append(r.PaymentHistory, Payment{PaymentID: paymentID, Amount: Int(total)})
	}
}

// giftShort is whether pm is a gift card whose balance is below total.
func giftShort(pm *PaymentMethod, total int64) bool {
	return pm.Source == "gift_card" && pm.Amount != nil && pm.Amount.Less(Int(total))
}

// UpdateReservationFlights is update_reservation_flights: flights is the
// whole new itinerary; a segment the reservation holds in the same cabin
// keeps its price, others are priced now; the difference is charged to
// (or, negative, refunded to) paymentID. As in τ-bench, the
// reservation's cabin is not changed and no seats are taken.
func (w *World) UpdateReservationFlights(reservationID, cabin string, flights []FlightRef, paymentID string) string {
	r, ok := w.Reservations.Get(reservationID)
	if !ok {
		return "Error: reservation not found"
	}
	n := len(r.Passengers)
	var total int64
	segs := make([]ReservationFlight, 0, len(flights))
	for _, f := range flights {
		held := -1
		for i, g := range r.Flights {
			if g.FlightNumber == f.FlightNumber && g.Date == f.Date && cabin == r.Cabin {
				held = i
				break
			}
		}
		if held >= 0 {
			g := r.Flights[held]
			segs = append(segs, ReservationFlight{
				FlightNumber: f.FlightNumber, Date: f.Date, Price: g.Price,
				Origin: g.Origin, Destination: g.Destination, Booked: true,
			})
			total += g.Price * int64(n)
			continue
		}
		seg, msg := w.segment(f, cabin, n)
		if msg != "" {
			return msg
		}
		segs = append(segs, seg)
		total += seg.Price * int64(n)
	}
	var old int64
	for _, g := range r.Flights {
		old += g.Price
	}
	total -= old * int64(n)
	pm, msg := w.paymentOf(r, paymentID)
	if msg != "" {
		return msg
	}
	if giftShort(pm, total) {
		return "Error: gift card balance is not enough"
	}
	if pm.Source == "gift_card" && pm.Amount == nil {
		return keyError("amount")
	}
	charge(r, pm, paymentID, total)
	r.Flights = segs
	return Dumps(r.Value())
}

// UpdateReservationBaggages is update_reservation_baggages: 50 per
// non-free bag beyond those held is charged to paymentID; the counts are
// set as given (fewer bags too, refunding nothing).
func (w *World) UpdateReservationBaggages(reservationID string, totalBaggages, nonfreeBaggages int64, paymentID string) string {
	r, ok := w.Reservations.Get(reservationID)
	if !ok {
		return "Error: reservation not found"
	}
	total := 50 * max(0, nonfreeBaggages-r.NonfreeBaggages)
	pm, msg := w.paymentOf(r, paymentID)
	if msg != "" {
		return msg
	}
	if giftShort(pm, total) {
		return "Error: gift card balance is not enough"
	}
	if pm.Source == "gift_card" && pm.Amount == nil {
		return keyError("amount")
	}
	r.TotalBaggages = totalBaggages
	r.NonfreeBaggages = nonfreeBaggages
	charge(r, pm, paymentID, total)
	return Dumps(r.Value())
}

// UpdateReservationPassengers is update_reservation_passengers: the
// passengers replaced, their number unchanged.
func (w *World) UpdateReservationPassengers(reservationID string, passengers []Passenger) string {
	r, ok := w.Reservations.Get(reservationID)
	if !ok {
		return "Error: reservation not found"
	}
	if len(passengers) != len(r.Passengers) {
		return "Error: number of passengers does not match"
	}
	r.Passengers = passengers
	return Dumps(r.Value())
}

// SendCertificate is send_certificate: a certificate of amount added to
// the user as certificate_3221322, else …323, else …324. With all three
// held τ-bench's tool returns None; this answers "None".
func (w *World) SendCertificate(userID string, amount Num) string {
	u, ok := w.Users.Get(userID)
	if !ok {
		return "Error: user not found"
	}
	for _, n := range []int{3221322, 3221323, 3221324} {
		id := fmt.Sprintf("certificate_%d", n)
		if _, held := u.PaymentMethods.Get(id); held {
			continue
		}
		a := amount
		u.PaymentMethods.Set(id, &PaymentMethod{Source: "certificate", Amount: &a, ID: id})
		return fmt.Sprintf("Certificate %s added to user %s with amount %s.", id, userID, amount)
	}
	return "None"
}
